package acpharbor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// wire is the agent's stdout. The SDK's connection writes one whole
// message per Write; Harbor's notifications, which the SDK cannot express
// (a session/update whose update is "custom"), are written here directly.
// Wire-level faults rewrite lines on their way out, so the agent's logic
// stays the SDK's and the fault is exactly what the suite sees.
type wire struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	faults  map[Fault]bool
	rewrite []func(map[string]any) // one-shot edits of the next response lines
	trailer [][]byte               // lines written right after the next response line, in the same write
	err     error
}

func newWire(w io.Writer, faults map[Fault]bool) *wire {
	return &wire{w: w, faults: faults}
}

// Write takes what the SDK writes and emits it line by line.
func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	w.mu.Unlock()
	for _, l := range lines {
		if err := w.emit(l); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// send writes one message the agent composes itself.
func (w *wire) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return w.emit(b)
}

// raw writes a line as is (a fault's stray output).
func (w *wire) raw(s string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := io.WriteString(w.w, s+"\n")
	return err
}

// onNextResponse edits the next response line before it is written.
func (w *wire) onNextResponse(f func(map[string]any)) {
	w.mu.Lock()
	w.rewrite = append(w.rewrite, f)
	w.mu.Unlock()
}

// trailNextResponse writes line right after the next response line, before
// anything else the agent writes: a late message whose order is certain,
// where an after function's goroutine may run after the client's next
// request has been answered.
func (w *wire) trailNextResponse(line []byte) {
	w.mu.Lock()
	w.trailer = append(w.trailer, line)
	w.mu.Unlock()
}

func (w *wire) emit(line []byte) error {
	var obj map[string]any
	isResponse := false
	if json.Unmarshal(line, &obj) == nil {
		_, hasID := obj["id"]
		_, hasMethod := obj["method"]
		isResponse = hasID && !hasMethod
	}
	w.mu.Lock()
	changed := false
	if isResponse && len(w.rewrite) > 0 {
		f := w.rewrite[0]
		w.rewrite = w.rewrite[1:]
		f(obj)
		changed = true
	}
	if e, ok := obj["error"].(map[string]any); ok && w.faults[FaultErrorCodeString] {
		if c, ok := e["code"].(float64); ok {
			e["code"] = strings.TrimSuffix(strings.TrimSuffix(jsonNumber(c), ".0"), ".")
			changed = true
		}
	}
	if changed {
		if b, err := json.Marshal(obj); err == nil {
			line = b
		}
	}
	out := append(line, '\n')
	if isResponse {
		for _, t := range w.trailer {
			out = append(append(out, t...), '\n')
		}
		w.trailer = nil
	}
	_, err := w.w.Write(out)
	w.mu.Unlock()
	return err
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// renameMethods is the harbor-prefix variant's stdin: Harbor requests
// under harbor/ reach the SDK as _ah/ (which dispatches extension methods
// by their leading underscore), and the _ah/ spelling is hidden, so the
// agent answers only the harbor/ names.
func renameMethods(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var obj map[string]json.RawMessage
			if json.Unmarshal(line, &obj) == nil {
				var m string
				if json.Unmarshal(obj["method"], &m) == nil {
					switch {
					case strings.HasPrefix(m, "harbor/"):
						m = "_ah/" + strings.TrimPrefix(m, "harbor/")
					case strings.HasPrefix(m, "_ah/"):
						m = "_ah-hidden/" + strings.TrimPrefix(m, "_ah/")
					}
					obj["method"], _ = json.Marshal(m)
					if b, err := json.Marshal(obj); err == nil {
						line = b
					}
				}
			}
			if _, err := pw.Write(append(bytes.Clone(line), '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}
