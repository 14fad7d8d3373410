// Package cardcli is the front end of `conform card`: it reads agent cards
// (the body of GET /v1/agent-card) from files or stdin, verifies their
// signatures under the card-signing profile harn-card-sig.v1 with package
// cardsig, and prints every signature and finding, so an implementer can
// see exactly why a card does not verify.
package cardcli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/cardsig"
	"github.com/harn-conform/conform/internal/receipt"
)

// Exit statuses: the common table of every conform command (package cli).
const (
	ExitValid   = cli.ExitOK    // every card signed and verified
	ExitInvalid = cli.ExitNotOK // a card is invalid or unsigned, or no signature of it was checked
	ExitInput   = cli.ExitError // unreadable input, bad flags or usage
)

// MaxKeysBytes bounds the key directory read; cards are read up to
// cardsig.MaxCardBytes.
const MaxKeysBytes = 1 << 20

const usage = `usage: conform card verify [flags] FILE...

Verifies the signature of HarnAgentCards (the body of GET /v1/agent-card)
under conform's card-signing profile ` + cardsig.Profile + ` (docs/card-signing.md):
ed25519 over the RFC 8785 canonical card without its "signature" and
"signatures" members, checked with the public keys of --keys (a key
directory document: save the target's GET /v1/receipt-keys). Every finding
names the requirement it breaks: EXT-CARD-001 (the card is signed and its
signature verifies) or EXT-CARD-002 (the signature names its algorithm and
key id). FILE "-" reads one card from stdin. Flags may come before or after
files.

A card is valid when it is signed, a signature verifies with a key of
--keys, and nothing failed. Without --keys (or when no signature's key or
algorithm can be checked) it is not called valid: exit 1, unless
--allow-unchecked-signatures accepts it on everything else.

Exit status: 0 all valid, 1 any invalid, unsigned or unchecked, 2 unreadable
input or usage error (2 wins over 1).

flags:
`

type config struct {
	canonical      bool
	allowUnchecked bool
	keys           string
	format         string
	out            string
	files          []string
}

// Main runs `conform card <args>`; args[0] is the subcommand (verify).
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, os.Stdin, stdout, stderr)
}

var command = cli.FileCommand{Command: "conform card", Subcommand: "verify", Usage: printUsage}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, code, done := command.Args(args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := parse(args)
	if err != nil {
		return command.UsageError(stderr, err)
	}
	return verify(cfg, stdin, stdout, stderr)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	cli.PrintFlags(w, newFlags(&config{}), nil)
}

func newFlags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("conform card verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.keys, "keys", "", "key directory `FILE` (JSON, docs/receipts.md §4) to verify signatures with")
	fs.BoolVar(&cfg.allowUnchecked, "allow-unchecked-signatures", false, "accept a signed card none of whose signatures could be checked (no --keys, an unlisted key id, or only unsupported algorithms) when nothing failed")
	fs.BoolVar(&cfg.canonical, "canonical", false, "also print the canonical bytes each signature covers")
	fs.StringVar(&cfg.format, "format", cli.FormatText, "`text|json`: what standard output carries: text, each signature and finding; json, the result document")
	fs.StringVar(&cfg.out, "out", "", "also write the result document (JSON) to `FILE`")
	return fs
}

// parse reads flags and files in any order; everything after "--" is a file.
func parse(args []string) (*config, error) {
	cfg := &config{}
	files, err := cli.ParseFiles(newFlags(cfg), args, "card")
	if err != nil {
		return nil, err
	}
	cfg.files = files
	if err := cli.CheckFormat(cfg.format); err != nil {
		return nil, err
	}
	if err := cli.OneStdin(append([]string{cfg.keys}, cfg.files...)...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Verdicts.
const (
	VerdictValid     = "valid"
	VerdictInvalid   = "invalid"              // a failure, or unsigned
	VerdictUnchecked = "signatures_unchecked" // signed, nothing failed, nothing verified
)

// report is one card's entry in the output.
type report struct {
	File string `json:"file"`
	cardsig.Result
	// Valid is the verdict the exit status follows; Verdict says which.
	Valid     bool    `json:"valid"`
	Verdict   string  `json:"verdict"`
	Canonical *string `json:"canonical,omitempty"`
}

type inputError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

type output struct {
	Profile string       `json:"profile"`
	Valid   bool         `json:"valid"`
	Cards   []report     `json:"cards"`
	Errors  []inputError `json:"errors,omitempty"`
}

func verify(cfg *config, stdin io.Reader, stdout, stderr io.Writer) int {
	var keys *receipt.KeySet
	if cfg.keys != "" {
		b, err := cli.ReadFile(cfg.keys, stdin, MaxKeysBytes)
		if err == nil {
			keys, err = receipt.ParseKeySet(b)
			if err != nil {
				err = fmt.Errorf("%s: %v", cfg.keys, err)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "conform card verify: --keys:", err)
			return ExitInput
		}
	}
	out := output{Profile: cardsig.Profile, Cards: []report{}}
	out.Valid = true
	for _, f := range cfg.files {
		raw, err := cli.ReadFile(f, stdin, cardsig.MaxCardBytes)
		if err != nil {
			out.Errors = append(out.Errors, inputError{File: cli.DisplayName(f), Error: err.Error()})
			fmt.Fprintln(stderr, "conform card verify:", err)
			out.Valid = false
			continue
		}
		rep := judge(cli.DisplayName(f), cardsig.Verify(raw, keys), cfg.allowUnchecked)
		if cfg.canonical && rep.Result.Canonical != nil {
			s := string(rep.Result.Canonical)
			rep.Canonical = &s
		}
		out.Valid = out.Valid && rep.Valid
		out.Cards = append(out.Cards, rep)
	}
	if err := emit(cfg, stdout, out); err != nil {
		fmt.Fprintln(stderr, "conform card verify:", err)
		return ExitInput
	}
	switch {
	case len(out.Errors) > 0:
		return ExitInput
	case !out.Valid:
		return ExitInvalid
	}
	return ExitValid
}

// judge turns a result into the verdict the exit status follows: a card
// with a failure (unsigned included) is invalid; one signed with nothing
// failed and nothing verified is not valid unless allowUnchecked, because
// "valid" must not be said of signatures nobody checked.
func judge(name string, r cardsig.Result, allowUnchecked bool) report {
	rep := report{File: name, Result: r}
	switch {
	case len(r.Failures("")) > 0:
		rep.Verdict = VerdictInvalid
	case r.Verified():
		rep.Verdict, rep.Valid = VerdictValid, true
	default:
		rep.Verdict, rep.Valid = VerdictUnchecked, allowUnchecked
	}
	return rep
}

// emit writes the result document to --out (if given) and the chosen
// format to stdout.
func emit(cfg *config, stdout io.Writer, out output) error {
	if cfg.out != "" {
		var b bytes.Buffer
		writeJSON(&b, out)
		if err := cli.WriteOut(cfg.out, b.Bytes()); err != nil {
			return err
		}
	}
	if cfg.format == cli.FormatJSON {
		writeJSON(stdout, out)
		return nil
	}
	writeText(stdout, out)
	return nil
}

func writeJSON(w io.Writer, out output) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // a failed write to stdout has nowhere better to go
}

func writeText(w io.Writer, out output) {
	valid, invalid, unchecked := 0, 0, 0
	for _, r := range out.Cards {
		var verdict string
		switch {
		case r.Verdict == VerdictInvalid:
			verdict = "INVALID"
			invalid++
		case r.Verdict == VerdictUnchecked && !r.Valid:
			verdict = "SIGNATURES NOT CHECKED (nothing failed, but no signature could be checked; give --keys FILE with the signing key, or --allow-unchecked-signatures to accept it unchecked)"
			unchecked++
		case r.Verdict == VerdictUnchecked:
			verdict = "VALID (everything but signatures: no signature checked; accepted by --allow-unchecked-signatures)"
			valid++
		default:
			verdict = "VALID"
			valid++
		}
		fmt.Fprintf(w, "%s: %s\n", r.File, verdict)
		if r.Digest != "" {
			fmt.Fprintf(w, "  signed bytes: %d bytes, %s (%s)\n", len(r.Result.Canonical), r.Digest, cardsig.Profile)
		}
		for _, s := range r.Signatures {
			// A signature that did not verify is explained by its finding.
			detail := s.Detail
			if s.Status != cardsig.StatusVerified {
				detail = fmt.Sprintf("algorithm %q, key_id %q", s.Algorithm, s.KeyID)
			}
			fmt.Fprintf(w, "  %-9s %s  %s\n", s.Status, s.Pointer, detail)
		}
		for _, f := range r.Findings {
			mark := "FAIL"
			if f.Kind == cardsig.KindUnchecked {
				mark = "note"
			}
			fmt.Fprintf(w, "  %-9s %s\n", mark, f.String())
		}
		if r.Canonical != nil {
			fmt.Fprintf(w, "  canonical bytes (%d, signed):\n%s\n", len(*r.Canonical), *r.Canonical)
		}
	}
	fmt.Fprintf(w, "%d card(s): %d valid, %d invalid", len(out.Cards), valid, invalid)
	if unchecked > 0 {
		fmt.Fprintf(w, ", %d with no signature checked", unchecked)
	}
	if len(out.Errors) > 0 {
		fmt.Fprintf(w, ", %d unreadable", len(out.Errors))
	}
	fmt.Fprintln(w)
}
