// Package openharnesscli is the front end of `conform openharness`: it
// validates OpenHarness v1 messages offline (request and response
// envelopes, from files or stdin) with package openharness and prints every
// finding with the requirement it breaks, so an implementer of a Shell or
// an Engine can check captured messages without running either.
package openharnesscli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	oh "github.com/harn-conform/conform/internal/openharness"
)

// Exit statuses: the common table of every conform command (package cli).
const (
	ExitValid   = cli.ExitOK    // every message valid (warnings allowed)
	ExitInvalid = cli.ExitNotOK // a message is invalid
	ExitInput   = cli.ExitError // unreadable input, bad flags or usage
)

const usage = `usage: conform openharness validate [flags] FILE...

Validates OpenHarness v1 messages offline: each FILE holds one request
envelope (Shell → Engine) or response envelope (Engine → Shell) as JSON.
It checks the envelope schema written from the document
(fixtures/schemas/openharness-*.v1.schema.json) and every rule a message
alone shows: semantic protocol_version, directives, error objects,
attachments by reference (no embedded blobs), capability denials,
extensions. A finding names its requirement (conform list --levels
openharness); a missed SHOULD is a warning and leaves the message valid.
FILE "-" reads one message from stdin. Flags may come before or after
files. See docs/openharness.md.

Exit status: 0 all valid, 1 any invalid, 2 unreadable input or usage error
(2 wins over 1).

flags:
`

type config struct {
	kind   string
	format string
	out    string
	files  []string
}

var command = cli.FileCommand{Command: "conform openharness", Subcommand: "validate", Usage: printUsage}

// Main runs `conform openharness <args>`; args[0] is the subcommand.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, code, done := command.Args(args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := parse(args)
	if err != nil {
		return command.UsageError(stderr, err)
	}
	return validate(cfg, stdin, stdout, stderr)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	cli.PrintFlags(w, newFlags(&config{}), nil)
}

func newFlags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("conform openharness validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.kind, "kind", "auto", "`auto|request|response`: which envelope the files hold (auto: a request member makes a request, a response member a response)")
	fs.StringVar(&cfg.format, "format", cli.FormatText, "`text|json`: what standard output carries: text, each finding; json, the result document")
	fs.StringVar(&cfg.out, "out", "", "also write the result document (JSON) to `FILE`")
	return fs
}

// parse reads flags and files in any order; everything after "--" is a file.
func parse(args []string) (*config, error) {
	cfg := &config{}
	files, err := cli.ParseFiles(newFlags(cfg), args, "message")
	if err != nil {
		return nil, err
	}
	cfg.files = files
	if err := cli.CheckFormat(cfg.format); err != nil {
		return nil, err
	}
	switch cfg.kind {
	case "auto", string(oh.Request), string(oh.Response):
	default:
		return nil, fmt.Errorf("--kind %q: want auto, request or response", cfg.kind)
	}
	if err := cli.OneStdin(cfg.files...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// message is one file's entry in the output.
type message struct {
	File string `json:"file"`
	oh.Result
}

type inputError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

type output struct {
	Valid    bool         `json:"valid"`
	Messages []message    `json:"messages"`
	Errors   []inputError `json:"errors,omitempty"`
}

func validate(cfg *config, stdin io.Reader, stdout, stderr io.Writer) int {
	out := output{Valid: true, Messages: []message{}}
	for _, f := range cfg.files {
		b, err := cli.ReadFile(f, stdin, oh.MaxMessageBytes)
		if errors.Is(err, cli.ErrTooLarge) {
			err = fmt.Errorf("%w (an envelope carries references, not bytes)", err)
		}
		if err != nil {
			out.Errors = append(out.Errors, inputError{File: cli.DisplayName(f), Error: err.Error()})
			fmt.Fprintln(stderr, "conform openharness validate:", err)
			continue
		}
		m := message{File: cli.DisplayName(f), Result: judge(b, oh.Kind(cfg.kind))}
		out.Valid = out.Valid && m.Valid
		out.Messages = append(out.Messages, m)
	}
	out.Valid = out.Valid && len(out.Errors) == 0
	if err := emit(cfg, stdout, out); err != nil {
		fmt.Fprintln(stderr, "conform openharness validate:", err)
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

// judge validates one message's bytes. Bytes that are no JSON object, or
// an object that is neither envelope, are invalid messages (exit 1), not
// unreadable input: the file was read, and what it holds is wrong.
func judge(b []byte, kind oh.Kind) oh.Result {
	doc, err := oh.Decode(b)
	if err != nil {
		return oh.Result{Kind: kind, Findings: []oh.Finding{{Req: envelopeReq(kind), Severity: oh.SeverityError, Message: err.Error()}}}
	}
	if kind == "auto" {
		k, err := oh.KindOf(doc)
		if err != nil {
			return oh.Result{Kind: kind, Findings: []oh.Finding{{Req: "OH-REQ-001", Severity: oh.SeverityError, Message: err.Error()}}}
		}
		kind = k
	}
	return oh.Validate(doc, kind)
}

// envelopeReq is the requirement a message that is no envelope breaks.
func envelopeReq(k oh.Kind) string {
	if k == oh.Response {
		return "OH-RESP-001"
	}
	return "OH-REQ-001"
}

func emit(cfg *config, stdout io.Writer, out output) error {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	if cfg.out != "" {
		if err := cli.WriteOut(cfg.out, js.Bytes()); err != nil {
			return err
		}
	}
	if cfg.format == cli.FormatJSON {
		_, err := stdout.Write(js.Bytes())
		return err
	}
	for _, m := range out.Messages {
		verdict := "valid"
		if !m.Valid {
			verdict = "INVALID"
		}
		fmt.Fprintf(stdout, "%s: %s %s\n", m.File, verdict, m.Kind)
		for _, f := range m.Findings {
			fmt.Fprintf(stdout, "  %-7s %s: %s\n", f.Severity, f.Req, f.Message)
		}
	}
	for _, e := range out.Errors {
		fmt.Fprintf(stdout, "%s: UNREADABLE: %s\n", e.File, e.Error)
	}
	return nil
}
