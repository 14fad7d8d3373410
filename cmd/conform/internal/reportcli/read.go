package reportcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/harn-conform/conform/reports"
)

// MaxReportBytes bounds a conform.json read: a report of a run where every
// spec failed with full transcripts stays far below it. A variable so tests
// can lower it.
var MaxReportBytes int64 = 256 << 20

var errTooLarge = errors.New("too large")

// capped fails a read past max bytes instead of truncating silently.
type capped struct {
	r      io.Reader
	n, max int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errTooLarge
	}
	if rest := c.max + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errTooLarge
	}
	return n, err
}

var idPattern = regexp.MustCompile(`^(CORE|EXT|RCPT|RPLY|OH|ACP)-[A-Z]+-[0-9]{3}$`) // requirements.ValidID's shape

// readReport reads the parts of a conform.json that diff and baseline use,
// streaming past the rest (specs and their transcripts) without keeping it.
// Its errors name the file.
func readReport(path string) (*reports.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	r, err := decodeReport(&capped{r: f, max: MaxReportBytes})
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a conform report this tool reads", path, MaxReportBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func decodeReport(rd io.Reader) (*reports.Report, error) {
	dec := json.NewDecoder(rd)
	if tok, err := dec.Token(); err != nil {
		return nil, notJSON(err)
	} else if tok != json.Delim('{') {
		return nil, errors.New("not a conform report: not a JSON object")
	}
	r := &reports.Report{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		key, _ := tok.(string)
		var dst any
		switch key {
		case "format":
			dst = &r.Format
		case "tool":
			dst = &r.Tool
		case "target":
			dst = &r.Target
		case "started_at":
			dst = &r.StartedAt
		case "config":
			dst = &r.Config
		case "levels":
			dst = &r.Levels
		case "requirements":
			dst = &r.Requirements
		case "baseline":
			dst = &r.Baseline
		case "exit_code":
			dst = &r.ExitCode
		}
		if dst == nil {
			err = skip(dec)
		} else {
			err = dec.Decode(dst)
		}
		if err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("not a conform report: field %s%s holds a JSON %s", key, dotted(te.Field), te.Value)
			}
			return nil, notJSON(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if errors.Is(err, errTooLarge) {
			return nil, err
		}
		return nil, errors.New("not a conform report: data after the JSON object")
	}
	if r.Format != reports.Format {
		return nil, fmt.Errorf("not a conform report: format %q, want %q", clipRunes(r.Format, 60), reports.Format)
	}
	seen := map[string]bool{}
	for i, q := range r.Requirements {
		if !idPattern.MatchString(q.ID) {
			return nil, fmt.Errorf("not a conform report: requirements[%d] has id %q", i, clipRunes(q.ID, 60))
		}
		if seen[q.ID] {
			return nil, fmt.Errorf("not a conform report: requirement %s is listed twice", q.ID)
		}
		seen[q.ID] = true
	}
	return r, nil
}

func dotted(field string) string {
	if field == "" {
		return ""
	}
	return "." + field
}

func notJSON(err error) error {
	if errors.Is(err, errTooLarge) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not a conform report: the JSON ends early (a truncated file?)")
	}
	return fmt.Errorf("not a conform report: invalid JSON: %v", err)
}

// skip consumes one JSON value token by token, keeping none of it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
