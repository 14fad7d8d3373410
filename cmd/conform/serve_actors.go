package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/builtin"
)

// The actors `conform serve` authenticates (docs/interpretations.md
// #authz-tenancy): actor_default, the first key's; actor_second, a tenant
// of its own, for the suite's --second-api-key; actor_read_only, in
// actor_default's tenant but allowed to read only, for --read-only-api-key.
// Each key comes from its --…-file flag, else its CONFORM_SERVE_… variable,
// else the one a previous serve generated in the data directory, else a
// new one (kept there with --data, printed to stderr without).

// serveActor is one actor of a serve and where its key comes from.
type serveActor struct {
	Actor string // the actor id the key authenticates
	What  string // its name in messages ("api key", "second api key", …)
	Flag  string // the flag naming a key file, without "--"
	Env   string // the variable holding the key
	File  string // the file name a generated key is kept under in the data directory
}

var (
	firstActor    = serveActor{Actor: refharness.ActorDefault, What: "api key", Flag: "api-key-file", Env: "CONFORM_SERVE_API_KEY", File: serveKeyFile}
	secondActor   = serveActor{Actor: refharness.ActorSecond, What: "second api key", Flag: "second-api-key-file", Env: "CONFORM_SERVE_SECOND_API_KEY", File: "second-api-key"}
	readOnlyActor = serveActor{Actor: refharness.ActorReadOnly, What: "read-only api key", Flag: "read-only-api-key-file", Env: "CONFORM_SERVE_READ_ONLY_API_KEY", File: "read-only-api-key"}
)

// actorFlags registers the key-file flags of the further actors.
func actorFlags(fs *flag.FlagSet) map[serveActor]*string {
	return map[serveActor]*string{
		secondActor: fs.String(secondActor.Flag, "", "`FILE` whose first line is the API key of actor_second, a tenant of its own (for conform run --second-api-key-file; else env "+
			secondActor.Env+", else generated like the first key, into DIR/"+secondActor.File+")"),
		readOnlyActor: fs.String(readOnlyActor.Flag, "", "`FILE` whose first line is the API key of actor_read_only, which may read actor_default's resources but change none (for conform run --read-only-api-key-file; else env "+
			readOnlyActor.Env+", else generated, into DIR/"+readOnlyActor.File+")"),
	}
}

// addActors gives opts the further actors' keys: actor_second a tenant of
// its own, actor_read_only actor_default's tenant and no write permission.
func addActors(opts *refharness.Options, first, data string, files map[serveActor]*string, getenv func(string) string, stderr io.Writer) error {
	keys := map[serveActor]string{}
	for _, a := range []serveActor{secondActor, readOnlyActor} {
		key, err := serveKey(a, data, *files[a], getenv, stderr)
		if err != nil {
			return err
		}
		keys[a] = key
	}
	o, err := opts.WithActors(refharness.Actors{Default: first, Second: keys[secondActor], ReadOnly: keys[readOnlyActor]})
	if err != nil {
		return err
	}
	*opts = o
	return nil
}

// serveKey picks the key of actor a: its key file, else its variable, else
// the key a previous serve generated in the data directory, else a new one
// — written there (0600) when there is a data directory, printed to stderr
// when there is none (the operator has no other way to learn it). A key
// kept in a file is never printed: the message names the file.
func serveKey(a serveActor, data, keyFile string, getenv func(string) string, stderr io.Writer) (string, error) {
	if keyFile != "" {
		return readKeyLine(keyFile, "--"+a.Flag)
	}
	if key := strings.TrimSpace(getenv(a.Env)); key != "" {
		return key, nil
	}
	if data == "" {
		key := builtin.NewAPIKey()
		// Deliberately printed: the operator needs it, and this harness is a
		// local stand-in; it goes to stderr, never into a report.
		fmt.Fprintf(stderr, "conform serve: %s: %s (in memory; with --data DIR it is kept in DIR/%s across restarts)\n", a.What, key, a.File)
		return key, nil
	}
	path := filepath.Join(data, a.File)
	if key, err := readKeyLine(path, "--data"); err == nil {
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(stderr, "conform serve: warning: %s is readable by others (mode %v); chmod 600 it\n", path, st.Mode().Perm())
		}
		fmt.Fprintf(stderr, "conform serve: %s: the one in %s\n", a.What, path)
		return key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", fmt.Errorf("--data: %w", err)
	}
	key := builtin.NewAPIKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Another serve over the same directory won the race: use its key.
		return readKeyLine(path, "--data")
	}
	if err != nil {
		return "", fmt.Errorf("--data: keeping the generated %s: %w", a.What, err)
	}
	_, werr := f.WriteString(key + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return "", fmt.Errorf("--data: keeping the generated %s: %w", a.What, werr)
	}
	fmt.Fprintf(stderr, "conform serve: %s: generated into %s (kept across restarts; read it from there)\n", a.What, path)
	return key, nil
}
