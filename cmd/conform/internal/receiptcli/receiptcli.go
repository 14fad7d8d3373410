// Package receiptcli is the front end of `conform receipt`: it reads
// receipts from files or stdin, verifies them with package receipt and
// prints every step, so an implementer can see exactly why a receipt fails.
package receiptcli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/internal/receipt"
)

// Exit statuses: the common table of every conform command (package cli).
const (
	ExitValid   = cli.ExitOK    // every receipt verified
	ExitInvalid = cli.ExitNotOK // a receipt is invalid, or signed with no signature checked
	ExitInput   = cli.ExitError // unreadable input, bad flags or usage
)

// Size bounds for what we read: a receipt is a summary, not a trace, so
// 8 MiB is generous; a key directory is a short list.
const (
	MaxReceiptBytes = 8 << 20
	MaxKeysBytes    = 1 << 20
)

const usage = `usage: conform receipt verify [flags] FILE...

Verifies receipt-2026-04-25 receipts: schema, receipt hash (RFC 8785 +
SHA-256), chain links, batch root, ed25519 signatures, secret material.
FILE "-" reads one receipt from stdin. Flags may come before or after files.

A signed receipt is checked against the public keys of --keys. Without
them (or when no signature is in an algorithm this verifier implements) its
signatures are not checked, and the receipt is not called valid: exit 1,
unless --allow-unchecked-signatures accepts it on everything else.

Exit status: 0 all valid, 1 any invalid (or signed with no signature
checked), 2 unreadable input or usage error (2 wins over 1).

flags:
`

type config struct {
	canonical      bool
	chain          bool
	allowUnchecked bool
	keys           string
	merkleRoot     string
	previous       string
	format         string
	out            string
	files          []string
}

var command = cli.FileCommand{Command: "conform receipt", Subcommand: "verify", Usage: printUsage}

// Main runs `conform receipt <args>`; args[0] is the subcommand.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
	fs := flag.NewFlagSet("conform receipt verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&cfg.canonical, "canonical", false, "also print the canonical bytes each hash is computed over")
	fs.BoolVar(&cfg.chain, "chain", false, "treat the files, in order, as one chain and check previous_receipt_hash links")
	fs.StringVar(&cfg.keys, "keys", "", "key directory `FILE` (JSON, see docs/receipts.md) to verify signatures with")
	fs.BoolVar(&cfg.allowUnchecked, "allow-unchecked-signatures", false, "accept a signed receipt whose signatures could not be checked (no --keys, or only unsupported algorithms) when everything else is valid")
	fs.StringVar(&cfg.merkleRoot, "merkle-root", "", "batch root `sha256:HEX` that chain.merkle_root must equal")
	fs.StringVar(&cfg.previous, "previous", "", "hash (`sha256:HEX`, or null) the first receipt's previous_receipt_hash must equal")
	fs.StringVar(&cfg.format, "format", cli.FormatText, "`text|json`: what standard output carries: text, each step; json, the result document")
	fs.StringVar(&cfg.out, "out", "", "also write the result document (JSON) to `FILE`")
	return fs
}

// parse reads flags and files in any order; everything after "--" is a file.
func parse(args []string) (*config, error) {
	cfg := &config{}
	files, err := cli.ParseFiles(newFlags(cfg), args, "receipt")
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
	for name, v := range map[string]string{"--merkle-root": cfg.merkleRoot, "--previous": cfg.previous} {
		if v != "" && !validHash(v) && !(name == "--previous" && v == "null") {
			return nil, fmt.Errorf("%s %q: want sha256: followed by 64 lowercase hex digits", name, v)
		}
	}
	return cfg, nil
}

func validHash(s string) bool {
	if !strings.HasPrefix(s, receipt.HashPrefix) || len(s) != len(receipt.HashPrefix)+64 {
		return false
	}
	for _, c := range s[len(receipt.HashPrefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// report is one receipt's entry in the output.
type report struct {
	File string `json:"file"`
	receipt.Result
	// Valid is the verdict the exit status follows: no finding, and no
	// signed receipt whose signatures all went unchecked (unless allowed).
	Valid bool `json:"valid"`
	// Verdict is valid, invalid (findings), or signatures_unchecked.
	Verdict string `json:"verdict"`
	// Signatures is the number of signatures the receipt carries;
	// SignaturesUnchecked how many of them were not checked, and
	// UncheckedReason why.
	Signatures          int     `json:"signatures"`
	SignaturesUnchecked int     `json:"signatures_unchecked"`
	UncheckedReason     string  `json:"unchecked_reason,omitempty"`
	Canonical           *string `json:"canonical,omitempty"`
}

// Verdicts.
const (
	VerdictValid     = "valid"
	VerdictInvalid   = "invalid"
	VerdictUnchecked = "signatures_unchecked"
)

type inputError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

type output struct {
	Valid    bool         `json:"valid"`
	Receipts []report     `json:"receipts"`
	Errors   []inputError `json:"errors,omitempty"`
}

func verify(cfg *config, stdin io.Reader, stdout, stderr io.Writer) int {
	opts := receipt.Options{MerkleRoot: cfg.merkleRoot, Previous: cfg.previous}
	var out output
	if cfg.keys != "" {
		b, err := cli.ReadFile(cfg.keys, stdin, MaxKeysBytes)
		if err == nil {
			opts.Keys, err = receipt.ParseKeySet(b)
			if err != nil {
				err = fmt.Errorf("%s: %v", cfg.keys, err)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "conform receipt verify: --keys:", err)
			return ExitInput
		}
	}
	var (
		names []string
		raws  [][]byte
	)
	for _, f := range cfg.files {
		b, err := cli.ReadFile(f, stdin, MaxReceiptBytes)
		if err != nil {
			out.Errors = append(out.Errors, inputError{File: cli.DisplayName(f), Error: err.Error()})
			fmt.Fprintln(stderr, "conform receipt verify:", err)
			continue
		}
		names = append(names, cli.DisplayName(f))
		raws = append(raws, b)
	}
	if cfg.chain && len(out.Errors) > 0 {
		// A chain with a missing link cannot be judged link by link.
		fmt.Fprintln(stderr, "conform receipt verify: --chain: not verifying an incomplete chain")
		if err := emit(cfg, stdout, out, false); err != nil {
			fmt.Fprintln(stderr, "conform receipt verify:", err)
		}
		return ExitInput
	}
	var results []receipt.Result
	if cfg.chain {
		results = receipt.VerifyChain(raws, opts)
	} else {
		for _, raw := range raws {
			results = append(results, receipt.Verify(raw, opts))
		}
	}
	out.Valid = len(out.Errors) == 0
	for i, r := range results {
		rep := judge(names[i], r, raws[i], opts.Keys != nil, cfg.allowUnchecked)
		if rep.Findings == nil {
			rep.Findings = []receipt.Finding{}
		}
		if cfg.canonical && r.Canonical != nil {
			s := string(r.Canonical)
			rep.Canonical = &s
		}
		out.Valid = out.Valid && rep.Valid
		out.Receipts = append(out.Receipts, rep)
	}
	if err := emit(cfg, stdout, out, true); err != nil {
		fmt.Fprintln(stderr, "conform receipt verify:", err)
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

// judge turns a verification result into the verdict the exit status
// follows. A receipt without findings whose signatures were all left
// unchecked is not valid unless allowUnchecked: "valid" must not be said
// of signatures nobody checked.
func judge(name string, r receipt.Result, raw []byte, haveKeys, allowUnchecked bool) report {
	rep := report{File: name, Result: r, Valid: r.Valid(), Verdict: VerdictValid, Signatures: countSignatures(raw)}
	if !rep.Valid {
		rep.Verdict = VerdictInvalid
		return rep
	}
	if rep.Signatures == 0 {
		return rep
	}
	for _, s := range r.Steps {
		if s.Name != receipt.StepSignatures {
			continue
		}
		switch {
		case s.Skipped:
			rep.SignaturesUnchecked = rep.Signatures
			rep.UncheckedReason = s.Detail
			if !haveKeys {
				rep.UncheckedReason = "no public keys given"
			}
		case s.OK:
			var checked int
			if _, err := fmt.Sscanf(s.Detail, "%d signature(s) verify", &checked); err == nil && checked < rep.Signatures {
				rep.SignaturesUnchecked = rep.Signatures - checked
				rep.UncheckedReason = "algorithm not implemented by this verifier (see the signatures step)"
			}
		}
	}
	if rep.SignaturesUnchecked == rep.Signatures && !allowUnchecked {
		rep.Valid, rep.Verdict = false, VerdictUnchecked
	}
	return rep
}

// countSignatures is the length of the receipt's signatures array (0 when
// there is none or the receipt does not parse; the steps say why).
func countSignatures(raw []byte) int {
	var doc struct {
		Signatures []json.RawMessage `json:"signatures"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return 0
	}
	return len(doc.Signatures)
}

// emit writes the result document to --out (if given) and the chosen
// format to stdout.
func emit(cfg *config, stdout io.Writer, out output, text bool) error {
	if out.Receipts == nil {
		out.Receipts = []report{}
	}
	if cfg.out != "" {
		var b bytes.Buffer
		writeJSON(&b, out)
		if err := cli.WriteOut(cfg.out, b.Bytes()); err != nil {
			return err
		}
	}
	switch {
	case cfg.format == cli.FormatJSON:
		writeJSON(stdout, out)
	case text:
		writeText(stdout, out)
	}
	return nil
}

func writeJSON(w io.Writer, out output) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // a failed write to stdout has nowhere better to go
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func writeText(w io.Writer, out output) {
	valid, invalid, unchecked := 0, 0, 0
	for _, r := range out.Receipts {
		var verdict string
		switch r.Verdict {
		case VerdictInvalid:
			verdict = "INVALID"
			invalid++
		case VerdictUnchecked:
			verdict = fmt.Sprintf("SIGNATURES NOT CHECKED (every other step passed; %s NOT checked: %s; give --keys FILE, or --allow-unchecked-signatures to accept it unchecked)", plural(r.SignaturesUnchecked, "signature"), r.UncheckedReason)
			unchecked++
		default:
			verdict = "VALID"
			valid++
			switch {
			case r.SignaturesUnchecked == r.Signatures && r.Signatures > 0:
				verdict = fmt.Sprintf("VALID (everything but signatures: %s NOT checked: %s; accepted by --allow-unchecked-signatures)", plural(r.SignaturesUnchecked, "signature"), r.UncheckedReason)
			case r.SignaturesUnchecked > 0:
				verdict = fmt.Sprintf("VALID (%d of %d signatures NOT checked: %s)", r.SignaturesUnchecked, r.Signatures, r.UncheckedReason)
			}
		}
		id := ""
		if r.ReceiptID != "" {
			id = fmt.Sprintf(" (%q)", r.ReceiptID)
		}
		fmt.Fprintf(w, "%s%s: %s\n", r.File, id, verdict)
		for _, s := range r.Steps {
			switch {
			case s.Skipped:
				fmt.Fprintf(w, "  skip  %-10s  %s\n", s.Name, s.Detail)
			case s.OK:
				fmt.Fprintf(w, "  ok    %-10s  %s\n", s.Name, s.Detail)
			default:
				fmt.Fprintf(w, "  FAIL  %s\n", s.Name)
				for _, f := range r.Findings {
					if f.Step == s.Name {
						fmt.Fprintf(w, "          %s: %s\n", f.Class, f.Message)
					}
				}
			}
		}
		if r.Stored != r.Computed {
			fmt.Fprintf(w, "  stored hash:   %s\n  computed hash: %s\n", orNone(r.Stored), orNone(r.Computed))
		}
		if r.Canonical != nil {
			fmt.Fprintf(w, "  canonical bytes (%d, hashed):\n%s\n", len(*r.Canonical), *r.Canonical)
		}
	}
	fmt.Fprintf(w, "%d receipt(s): %d valid, %d invalid", len(out.Receipts), valid, invalid)
	if unchecked > 0 {
		fmt.Fprintf(w, ", %d with no signature checked", unchecked)
	}
	if len(out.Errors) > 0 {
		fmt.Fprintf(w, ", %d unreadable", len(out.Errors))
	}
	fmt.Fprintln(w)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
