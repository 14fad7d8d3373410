package tape

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"lukechampine.com/blake3"
)

// CAS is a tape's content-addressed sidecar directory: one file per distinct
// payload, named by the BLAKE3-256 hex digest of its bytes.
type CAS struct {
	Dir string
}

// Path returns where the payload with the given hash lives. The hash must
// already have passed checkHash (every Payload from a Reader has).
func (c CAS) Path(hash string) string { return filepath.Join(c.Dir, hash) }

// Put stores b under its hash and returns the hash. Storing the same bytes
// twice writes one file. The file appears atomically (temporary file, then
// rename), so a crash never leaves a truncated payload under a valid name.
func (c CAS) Put(b []byte) (string, error) {
	h := Hash(b)
	p := c.Path(h)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(b)) {
		return h, nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(c.Dir, ".put-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return h, nil
}

// Check re-hashes the stored payload and compares it with hash and, when
// size >= 0, with size. It streams the file, so payload size does not
// matter for memory. Problems are *Errors of code CodeCASMissing or
// CodeCASCorrupt.
func (c CAS) Check(hash string, size int64) error {
	if err := checkHash(hash); err != nil {
		return &Error{Name: c.Dir, Code: CodeCASCorrupt, Msg: err.Error()}
	}
	p := c.Path(hash)
	f, err := c.Open(hash)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &Error{Name: p, Code: CodeIO, Msg: err.Error()}
	}
	if size >= 0 && fi.Size() != size {
		return &Error{Name: p, Code: CodeCASCorrupt, Msg: fmt.Sprintf("size = %d bytes, want len_bytes %d", fi.Size(), size)}
	}
	hasher := blake3.New(32, nil)
	// Read one byte past the stat size so a file growing under us is noticed.
	n, err := io.Copy(hasher, io.LimitReader(f, fi.Size()+1))
	if err != nil {
		return &Error{Name: p, Code: CodeIO, Msg: err.Error()}
	}
	if n != fi.Size() {
		return &Error{Name: p, Code: CodeCASCorrupt, Msg: fmt.Sprintf("read %d bytes, stat said %d (changed while reading)", n, fi.Size())}
	}
	if got := fmt.Sprintf("%x", hasher.Sum(nil)); got != hash {
		return &Error{Name: p, Code: CodeCASCorrupt, Msg: fmt.Sprintf("bytes hash to %s, want %s", got, hash)}
	}
	return nil
}

// Open opens the stored payload for reading. It refuses anything but a
// regular file before opening it: opening a FIFO planted in a sidecar
// would block forever. Errors are *Errors (CodeCASMissing, CodeCASCorrupt,
// CodeIO).
func (c CAS) Open(hash string) (*os.File, error) {
	if err := checkHash(hash); err != nil {
		return nil, &Error{Name: c.Dir, Code: CodeCASCorrupt, Msg: err.Error()}
	}
	p := c.Path(hash)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Name: p, Code: CodeCASMissing, Msg: "payload file is missing"}
	}
	if err != nil {
		return nil, &Error{Name: p, Code: CodeIO, Msg: err.Error()}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Name: p, Code: CodeCASCorrupt, Msg: "not a regular file"}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, &Error{Name: p, Code: CodeIO, Msg: err.Error()}
	}
	return f, nil
}

// Bytes returns a payload's raw bytes: the inline text, or the spilled
// file, read whole and checked against the payload's length and hash.
// max bounds how many bytes a spilled payload may have, so a hostile
// len_bytes cannot make the caller allocate without limit.
func (c CAS) Bytes(p Payload, max int64) ([]byte, error) {
	if !p.Spilled {
		return []byte(p.Text), nil
	}
	if p.Len > max {
		return nil, &Error{Name: c.Dir, Code: CodeCASCorrupt, Msg: fmt.Sprintf("payload %s has len_bytes %d, over the %d allowed", p.Hash, p.Len, max)}
	}
	f, err := c.Open(p.Hash)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, p.Len+1))
	if err != nil {
		return nil, &Error{Name: c.Path(p.Hash), Code: CodeIO, Msg: err.Error()}
	}
	if int64(len(b)) != p.Len {
		return nil, &Error{Name: c.Path(p.Hash), Code: CodeCASCorrupt, Msg: fmt.Sprintf("file has %d bytes or more, want len_bytes %d", len(b), p.Len)}
	}
	if got := Hash(b); got != p.Hash {
		return nil, &Error{Name: c.Path(p.Hash), Code: CodeCASCorrupt, Msg: fmt.Sprintf("bytes hash to %s, want %s", got, p.Hash)}
	}
	return b, nil
}
