package journal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func reopen(t *testing.T, path string) (*Journal, [][]byte) {
	t.Helper()
	var got [][]byte
	j, err := Open(path, func(seq uint64, rec []byte) error {
		if want := uint64(len(got) + 1); seq != want {
			t.Errorf("replay seq = %d, want %d", seq, want)
		}
		got = append(got, rec)
		return nil
	}, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j, got
}

func TestAppendReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, got := reopen(t, path)
	if len(got) != 0 {
		t.Fatalf("fresh journal replayed %d records", len(got))
	}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := j.Append([]byte(fmt.Sprintf("record %d", i)))
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
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := j.Append([]byte("late")); err != ErrClosed {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	j2, got := reopen(t, path)
	defer j2.Close()
	if len(got) != 50 {
		t.Fatalf("replayed %d records, want 50", len(got))
	}
	seq, _ := j2.Append([]byte("after reopen"))
	if seq != 51 {
		t.Errorf("seq after reopen = %d, want 51", seq)
	}
}

func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(b []byte) []byte
	}{
		{"partial header", func(b []byte) []byte { return append(b, 9, 0) }},
		{"partial payload", func(b []byte) []byte { return append(b, 100, 0, 0, 0, 1, 2, 3, 4, 'x') }},
		{"bad checksum", func(b []byte) []byte { b = append([]byte(nil), b...); b[len(b)-1] ^= 0xff; return b }},
		{"absurd length", func(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			j, _ := reopen(t, path)
			for _, r := range []string{"one", "two", "three"} {
				seq, _ := j.Append([]byte(r))
				if err := j.Wait(seq); err != nil {
					t.Fatal(err)
				}
			}
			j.Close()
			b, _ := os.ReadFile(path)
			good := len(b)
			os.WriteFile(path, tc.tear(b), 0o600)
			j2, got := reopen(t, path)
			defer j2.Close()
			want := 3
			if tc.name == "bad checksum" {
				want = 2 // the last record itself is the torn one
			}
			if len(got) != want {
				t.Fatalf("replayed %d records, want %d", len(got), want)
			}
			if j2.Cut == 0 {
				t.Errorf("Cut = 0, want the torn bytes counted")
			}
			st, _ := os.Stat(path)
			if tc.name != "bad checksum" && st.Size() != int64(good) {
				t.Errorf("size after cut = %d, want %d", st.Size(), good)
			}
			seq, _ := j2.Append([]byte("four"))
			if err := j2.Wait(seq); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	os.WriteFile(path, []byte("this is not a journal at all"), 0o600)
	if _, err := Open(path, func(uint64, []byte) error { return nil }, nil); err == nil {
		t.Fatal("Open accepted a foreign file")
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, []byte("this is not a journal at all")) {
		t.Error("Open modified a foreign file")
	}
}

func TestReplayErrorStopsOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := reopen(t, path)
	seq, _ := j.Append([]byte("x"))
	j.Wait(seq)
	j.Close()
	if _, err := Open(path, func(uint64, []byte) error { return fmt.Errorf("bad record") }, nil); err == nil {
		t.Fatal("Open ignored a replay error")
	}
}

func BenchmarkAppendWait(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), "j"), func(uint64, []byte) error { return nil }, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	rec := bytes.Repeat([]byte("x"), 512)
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			seq, err := j.Append(rec)
			if err == nil {
				err = j.Wait(seq)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func TestSecondOpenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _ := reopen(t, path)
	if _, err := Open(path, func(uint64, []byte) error { return nil }, nil); err == nil {
		t.Fatal("a second Open of a journal in use succeeded")
	}
	j.Close()
	j2, _ := reopen(t, path)
	j2.Close()
}

// FuzzOpen feeds arbitrary bytes after a valid header and a valid record:
// Open must never panic, and whatever it keeps must be a prefix of intact
// records that survives a second Open unchanged.
func FuzzOpen(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 0, 1, 2, 3, 4, 'a', 'b'})
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, tail []byte) {
		path := filepath.Join(t.TempDir(), "j")
		j, err := Open(path, func(uint64, []byte) error { return nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := j.Append([]byte("first"))
		j.Wait(seq)
		j.Close()
		fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		fh.Write(tail)
		fh.Close()
		var first [][]byte
		j2, err := Open(path, func(_ uint64, r []byte) error { first = append(first, append([]byte(nil), r...)); return nil }, nil)
		if err != nil {
			return // refusing is fine; panicking is not
		}
		j2.Close()
		if len(first) == 0 || string(first[0]) != "first" {
			t.Fatalf("the intact first record was lost: %q", first)
		}
		var second [][]byte
		j3, err := Open(path, func(_ uint64, r []byte) error { second = append(second, append([]byte(nil), r...)); return nil }, nil)
		if err != nil {
			t.Fatalf("reopen after cut: %v", err)
		}
		j3.Close()
		if len(second) != len(first) || j3.Cut != 0 {
			t.Fatalf("second open saw %d records (cut %d), first saw %d", len(second), j3.Cut, len(first))
		}
	})
}
