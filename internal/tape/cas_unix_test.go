//go:build unix

package tape

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCASRefusesSpecialFiles plants a FIFO where a payload should be:
// opening it for reading would block forever, so it must be refused.
func TestCASRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	h := Hash([]byte("x"))
	if err := syscall.Mkfifo(filepath.Join(dir, h), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	cas := CAS{Dir: dir}
	var te *Error
	if err := cas.Check(h, 1); !errors.As(err, &te) || te.Code != CodeCASCorrupt {
		t.Errorf("Check(FIFO) = %v, want %s", err, CodeCASCorrupt)
	}
	if _, err := cas.Bytes(Payload{Hash: h, Spilled: true, Len: 1}, 10); !errors.As(err, &te) || te.Code != CodeCASCorrupt {
		t.Errorf("Bytes(FIFO) = %v, want %s", err, CodeCASCorrupt)
	}
}
