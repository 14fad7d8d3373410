package refharness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-conform/conform/internal/tape"
)

// Probes of the tape faults (replay_tape.go): each runs a source with a
// model response of more than 4 KiB (so one payload must spill) and
// validates the tape the Harness offers for it, looking for the one code
// its fault produces; what another fault breaks makes it step aside.
func init() {
	for f, code := range map[Fault]tape.Code{
		FaultTapeHeaderMissing:   tape.CodeMissingHeader,
		FaultTapeSeqRepeats:      tape.CodeSeqOrder,
		FaultTapeLargeInline:     tape.CodeInlineTooBig,
		FaultTapeInlineHashWrong: tape.CodeInlineHash,
	} {
		if probes[f] != nil {
			panic("probe of " + string(f) + " defined twice")
		}
		probes[f] = func(p *probeEnv) error {
			codes, err := p.tapeCodes()
			if err != nil {
				return err
			}
			for _, c := range codes {
				if c == code {
					return fmt.Errorf("the task's tape is not a valid spec 003 tape: %s", c)
				}
			}
			return nil
		}
	}
}

// tapeCodes runs a source whose model response spills, downloads its tape
// and sidecar, and returns the codes tape.Validate finds (the reading
// error's among them).
func (p *probeEnv) tapeCodes() ([]tape.Code, error) {
	long := strings.Repeat("a long recorded answer, ", 250) // > 4 KiB of text
	src, _ := p.replaySource(step("clock_read", "label", "started_at", "value_ms", 1000),
		step("model_call", "call_id", "main:1", "response", map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": long}}}}),
		step("mcp_call", "server", "search", "call_id", "call_0002", "result", map[string]any{"hits": 1}))
	arts := p.do("GET", "/v1/artifacts?limit=100&task_id="+src, nil).list()
	var tapeID string
	for _, a := range arts {
		if meta, _ := a["metadata"].(map[string]any); meta[tapeMetaKey] == true {
			tapeID, _ = a["id"].(string)
		}
	}
	if tapeID == "" {
		return nil, cannotJudge("task %s offers no tape among %d artifacts", src, len(arts))
	}
	dir, err := os.MkdirTemp("", "refharness-tape-probe-")
	if err != nil {
		return nil, cannotJudge("%v", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.tape")
	if err := os.WriteFile(path, p.do("GET", "/v1/artifacts/"+tapeID+"/content", nil).Raw, 0o644); err != nil {
		return nil, cannotJudge("%v", err)
	}
	for _, a := range arts {
		meta, _ := a["metadata"].(map[string]any)
		h, _ := meta["hash"].(string)
		if meta[tapeCASMetaKey] != tapeID || len(h) != 64 {
			continue
		}
		id, _ := a["id"].(string)
		if err := os.MkdirAll(tape.CASDir(path), 0o755); err != nil {
			return nil, cannotJudge("%v", err)
		}
		if err := os.WriteFile(filepath.Join(tape.CASDir(path), h), p.do("GET", "/v1/artifacts/"+id+"/content", nil).Raw, 0o644); err != nil {
			return nil, cannotJudge("%v", err)
		}
	}
	rep, err := tape.Validate(path)
	var codes []tape.Code
	var te *tape.Error
	if errors.As(err, &te) {
		codes = append(codes, te.Code)
	}
	if rep != nil {
		for _, f := range rep.Findings {
			codes = append(codes, f.Code)
		}
	}
	return codes, nil
}
