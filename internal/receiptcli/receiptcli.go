// Package receiptcli is the front end of `conform receipt`: it reads
// receipts from files or stdin, verifies them with package receipt and
// prints every step, so an implementer can see exactly why a receipt fails.
package receiptcli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harn-conform/conform/internal/receipt"
)

// Exit statuses.
const (
	ExitValid   = 0 // every receipt verified
	ExitInvalid = 1 // at least one receipt is invalid
	ExitInput   = 2 // unreadable input, bad flags or usage
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
FILE "-" reads one receipt from stdin.

Exit status: 0 all valid, 1 any invalid, 2 unreadable input or usage error.

flags:
`

type config struct {
	canonical  bool
	chain      bool
	keys       string
	merkleRoot string
	previous   string
	format     string
	files      []string
}

// Main runs `conform receipt <args>`; args[0] is the subcommand.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitInput
	}
	switch args[0] {
	case "verify":
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		newFlags(&config{}, stdout).PrintDefaults()
		return ExitValid
	default:
		fmt.Fprintf(stderr, "conform receipt: unknown subcommand %q (want verify)\n", args[0])
		return ExitInput
	}
	cfg, err := parse(args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitValid
	}
	if err != nil {
		fmt.Fprintln(stderr, "conform receipt verify:", err)
		return ExitInput
	}
	return verify(cfg, stdin, stdout, stderr)
}

func newFlags(cfg *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("conform receipt verify", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.BoolVar(&cfg.canonical, "canonical", false, "also print the canonical bytes each hash is computed over")
	fs.BoolVar(&cfg.chain, "chain", false, "treat the files, in order, as one chain and check previous_receipt_hash links")
	fs.StringVar(&cfg.keys, "keys", "", "key directory `FILE` (JSON, see docs/receipts.md) to verify signatures with")
	fs.StringVar(&cfg.merkleRoot, "merkle-root", "", "batch root `sha256:HEX` that chain.merkle_root must equal")
	fs.StringVar(&cfg.previous, "previous", "", "hash (`sha256:HEX`, or null) the first receipt's previous_receipt_hash must equal")
	fs.StringVar(&cfg.format, "format", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprint(out, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse reads flags and files in any order; everything after "--" is a file.
func parse(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := newFlags(cfg, stderr)
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		cfg.files = append(cfg.files, args[0])
		args = args[1:]
	}
	cfg.files = append(cfg.files, tail...)
	if len(cfg.files) == 0 {
		return nil, errors.New("no receipt files given (use - for stdin)")
	}
	if cfg.format != "text" && cfg.format != "json" {
		return nil, fmt.Errorf("--format %q: want text or json", cfg.format)
	}
	stdins := 0
	for _, f := range cfg.files {
		if f == "-" {
			stdins++
		}
	}
	if cfg.keys == "-" {
		stdins++
	}
	if stdins > 1 {
		return nil, errors.New(`"-" (stdin) given more than once`)
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

// readBounded reads at most limit bytes, failing (not truncating) beyond.
func readBounded(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes, refusing to read further", name, limit)
	}
	return b, nil
}

func readFile(path string, stdin io.Reader, limit int64) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("<stdin>: no standard input")
		}
		return readBounded(stdin, "<stdin>", limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err // already names the file
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	return readBounded(f, path, limit)
}

func displayName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}

// report is one receipt's entry in the output.
type report struct {
	File string `json:"file"`
	receipt.Result
	Valid     bool    `json:"valid"`
	Canonical *string `json:"canonical,omitempty"`
}

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
		b, err := readFile(cfg.keys, stdin, MaxKeysBytes)
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
		b, err := readFile(f, stdin, MaxReceiptBytes)
		if err != nil {
			out.Errors = append(out.Errors, inputError{File: displayName(f), Error: err.Error()})
			fmt.Fprintln(stderr, "conform receipt verify:", err)
			continue
		}
		names = append(names, displayName(f))
		raws = append(raws, b)
	}
	if cfg.chain && len(out.Errors) > 0 {
		// A chain with a missing link cannot be judged link by link.
		fmt.Fprintln(stderr, "conform receipt verify: --chain: not verifying an incomplete chain")
		if cfg.format == "json" {
			writeJSON(stdout, out)
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
		rep := report{File: names[i], Result: r, Valid: r.Valid()}
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
	if cfg.format == "json" {
		writeJSON(stdout, out)
	} else {
		writeText(stdout, out)
	}
	switch {
	case len(out.Errors) > 0:
		return ExitInput
	case !out.Valid:
		return ExitInvalid
	}
	return ExitValid
}

func writeJSON(w io.Writer, out output) {
	if out.Receipts == nil {
		out.Receipts = []report{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // a failed write to stdout has nowhere better to go
}

func writeText(w io.Writer, out output) {
	valid := 0
	for _, r := range out.Receipts {
		verdict := "INVALID"
		if r.Valid {
			verdict = "VALID"
			valid++
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
	fmt.Fprintf(w, "%d receipt(s): %d valid, %d invalid", len(out.Receipts), valid, len(out.Receipts)-valid)
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
