// Package cli is the one command-line grammar of the conform binary: the
// exit codes every command shares, help words, the flag listing of -h, and
// the --format / --out conventions. Commands live in their own packages
// (cmd/conform, internal/receiptcli, internal/tapecli, …) and use these so
// that every command reads and exits the same way.
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-conform/conform/internal/suggest"
)

// The exit codes of every conform command (README, "Exit codes"). The one
// deviation, `conform tape diff`, is documented there and in its usage.
const (
	// ExitOK: success — conformant, valid, equal, no regression; also help.
	ExitOK = 0
	// ExitNotOK: the thing checked is not OK — not conformant, an invalid
	// receipt, tapes that diverge, an invalid tape, a regression.
	ExitNotOK = 1
	// ExitError: the tool could not decide — a usage or configuration
	// error, unreadable input, an unreachable target, an engine error.
	ExitError = 2
)

// IsHelp reports whether an argument asks for help: -h, -help, --help, or
// the word help.
func IsHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// AsksHelp reports whether a command line asks for help: a -h, -help or
// --help anywhere before "--", or the lone word help.
func AsksHelp(args []string) bool {
	if len(args) == 1 && args[0] == "help" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a != "help" && IsHelp(a) {
			return true
		}
	}
	return false
}

// Formats of standard output.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// CheckFormat validates a --format value.
func CheckFormat(v string) error {
	if v != FormatText && v != FormatJSON {
		return fmt.Errorf("--format %q: want text or json", v)
	}
	return nil
}

// PrintFlags lists the flags of fs, sorted by name, as
//
//	--name KIND
//	      help (default …)
//
// KIND is kinds[name] when set, else the back-quoted word of the flag's
// usage (as flag.UnquoteUsage finds it), which is dropped from the help
// when the usage starts with it and a colon; boolean flags have none.
func PrintFlags(w io.Writer, fs *flag.FlagSet, kinds map[string]string) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		// "`text|json`: what …" reads "--format text|json" then "what …".
		if kind != "" && strings.HasPrefix(usage, kind+": ") {
			usage = strings.TrimPrefix(usage, kind+": ")
		}
		if k, ok := kinds[f.Name]; ok {
			kind = k
		}
		if isBool(f) {
			kind = ""
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		if f.DefValue != "" && !isZero(f) && !strings.Contains(usage, "default ") {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, strings.ReplaceAll(usage, "\n", "\n        "))
	})
}

// FlagGroup is a titled group of flags for -h, listed in its order.
type FlagGroup struct {
	Title string
	Flags []string
}

// PrintFlagGroups lists the flags of fs as PrintFlags does, group by
// group in the groups' order, then the flags no group names under "other
// flags" (sorted). Names fs does not define are left out, and so is a
// group left empty.
func PrintFlagGroups(w io.Writer, fs *flag.FlagSet, kinds map[string]string, groups []FlagGroup) {
	listed := map[string]bool{}
	one := func(names []string, title string) {
		var order []*flag.Flag
		for _, n := range names {
			if f := fs.Lookup(n); f != nil && !listed[n] {
				listed[n] = true
				order = append(order, f)
			}
		}
		if len(order) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range order {
			single := flag.NewFlagSet("", flag.ContinueOnError)
			single.Var(f.Value, f.Name, f.Usage)
			single.Lookup(f.Name).DefValue = f.DefValue
			PrintFlags(w, single, kinds)
		}
	}
	for _, g := range groups {
		one(g.Flags, g.Title)
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	one(rest, "other flags")
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func isZero(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// WriteOut writes a result file for --out FILE: created or replaced
// whole (a temporary file in the same directory, then a rename), so a
// reader never sees half a result.
func WriteOut(path string, b []byte) error {
	if path == "" {
		return fmt.Errorf("--out: empty file name")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--out %s: is a directory, want a file name", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("--out: %w", werr)
	}
	return nil
}

// FlagError adds "did you mean --X?" to the flag package's error for an
// undefined flag of fs, naming its nearest flag.
func FlagError(fs *flag.FlagSet, err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return err
	}
	name := strings.TrimLeft(strings.TrimPrefix(msg, undefined), "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if h := suggest.Hint(name, names, "--%s"); h != "" {
		return errors.New(msg + h)
	}
	return err
}

// UnknownCommand is the error for a command or subcommand word that names
// none of commands, with the nearest one.
func UnknownCommand(what, word string, commands []string) string {
	return fmt.Sprintf("unknown %s %q%s", what, word, suggest.Hint(word, commands, "%q"))
}

// WriteJSON encodes v, indented, without HTML escaping, to w: what
// --format json prints.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
