package journal

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestAppendLazyOrder: records encoded by the flusher keep the places they
// were given at append time, mixed with plain appends, and are durable with
// the same bytes after a reopen.
func TestAppendLazyOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := reopen(t, path)
	var mu sync.Mutex // orders appends, as the harness's lock does
	want := map[uint64][]byte{}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := []byte(fmt.Sprintf("record %d", i))
			mu.Lock()
			var seq uint64
			var err error
			if i%3 == 0 {
				seq, err = j.Append(rec)
			} else {
				seq, err = j.AppendLazy(func() ([]byte, error) { return rec, nil })
			}
			if err == nil {
				want[seq] = rec
			}
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			if err := j.Wait(seq); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if st := j.Stats(); st.Records != 200 || st.Syncs < 1 || st.Syncs > 200 {
		t.Errorf("Stats = %+v, want 200 records in 1..200 syncs", st)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, got := reopen(t, path)
	defer j2.Close()
	if len(got) != 200 {
		t.Fatalf("replayed %d records, want 200", len(got))
	}
	for i, rec := range got {
		if !bytes.Equal(rec, want[uint64(i+1)]) {
			t.Fatalf("record %d = %q, want %q", i+1, rec, want[uint64(i+1)])
		}
	}
}

// TestAppendLazyEncodeError: a record that cannot be encoded fails the
// journal like a write error: it and every later record are never durable,
// records made durable before it stay.
func TestAppendLazyEncodeError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := reopen(t, path)
	first, err := j.Append([]byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(first); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	release := make(chan struct{})
	bad, err1 := j.AppendLazy(func() ([]byte, error) { <-release; return nil, boom })
	after, err2 := j.Append([]byte("after")) // appended before the encoding fails
	close(release)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for _, seq := range []uint64{bad, after} {
		if err := j.Wait(seq); !errors.Is(err, boom) {
			t.Errorf("Wait(%d) = %v, want the encode error", seq, err)
		}
	}
	if _, err := j.Append([]byte("late")); !errors.Is(err, boom) {
		t.Errorf("Append after the failure = %v, want the encode error", err)
	}
	if _, err := j.AppendLazy(func() ([]byte, error) { return make([]byte, MaxRecord+1), nil }); err == nil {
		t.Error("AppendLazy after the failure succeeded")
	}
	j.Close()
	j2, got := reopen(t, path)
	defer j2.Close()
	if len(got) != 1 || string(got[0]) != "before" {
		t.Errorf("replayed %q, want only the record made durable before the failure", got)
	}
}

// TestAppendLazyTooLarge: an encoded record over MaxRecord fails the journal.
func TestAppendLazyTooLarge(t *testing.T) {
	j, _ := reopen(t, filepath.Join(t.TempDir(), "j"))
	defer j.Close()
	seq, err := j.AppendLazy(func() ([]byte, error) { return make([]byte, MaxRecord+1), nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(seq); err == nil {
		t.Error("Wait on an oversized lazy record succeeded")
	}
}
