package acp

import (
	"bytes"
	"testing"
)

// FuzzDecode: any line the agent writes is decoded without a panic, Raw is
// the line, every problem names a requirement, a fatal error comes with a
// problem, and a clean message has a kind.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"type":"custom","customType":"harbor/x"}}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"m","data":null}}`,
		`{"jsonrpc":"2.0","id":1e400,"result":1}`,
		`[1,2]`, `"str"`, `{`, "\xff\xfe", `{"id":null,"error":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, probs, err := Decode(line)
		if !bytes.Equal(m.Raw, line) {
			t.Fatalf("Raw = %q, want the line", m.Raw)
		}
		if err != nil && len(probs) == 0 {
			t.Fatalf("fatal error %v without a problem", err)
		}
		for _, p := range probs {
			if p.Req != ReqFraming && p.Req != ReqResponse && p.Req != ReqErrorObject {
				t.Fatalf("problem %q names %q", p.Message, p.Req)
			}
		}
		if err == nil && len(probs) == 0 && m.Kind == KindInvalid {
			t.Fatalf("a clean message without a kind: %q", line)
		}
		if m.Kind == KindResponse && m.Error != nil && m.Error.CodeOK && len(probs) == 0 && m.IDKey == "" {
			t.Fatalf("a clean response without an id key: %q", line)
		}
	})
}
