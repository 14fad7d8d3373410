package tape

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRead feeds arbitrary bytes to the reader. It must never panic or
// return an unstructured error, and whatever it accepts must survive a
// write-read cycle unchanged and rewrite to identical bytes.
func FuzzRead(f *testing.F) {
	for _, n := range goldenNames {
		if b, err := os.ReadFile(golden(n)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(hdr + "\n" + okRec + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"record","seq":1,"virtual_time_ms":0,"monotonic_ms":0,"kind":"x","SEQ":2,"a":[1,{"b":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Read: error %v (%T) is not a *tape.Error", err, err)
			}
			return
		}
		var first bytes.Buffer
		if err := WriteTape(&first, tp); err != nil {
			t.Fatalf("WriteTape of an accepted tape: %v", err)
		}
		again, err := Read(bytes.NewReader(first.Bytes()), "rewrite")
		if err != nil {
			t.Fatalf("Read of our own output: %v\n%s", err, first.Bytes())
		}
		if diff := cmp.Diff(tp, again); diff != "" {
			t.Fatalf("read-write-read changed the tape (-first +second):\n%s", diff)
		}
		var second bytes.Buffer
		if err := WriteTape(&second, again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("second write differs:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}
