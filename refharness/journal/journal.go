// Package journal is an append-only, checksummed, fsync'd record log with
// group commit. It is the durable source of truth of the reference harness:
// every record is written and synced before the caller is told it is durable,
// and a torn tail left by a crash is detected and cut when the log is opened.
//
// File layout: an 8-byte magic header, then records, each
//
//	uint32 little-endian payload length
//	uint32 little-endian CRC-32C of the payload
//	payload
//
// Records are opaque bytes to this package.
package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// magic opens every journal file; it names the format and its version so an
// unrelated file is refused instead of being "repaired" into an empty log.
const magic = "HARNJL01"

const headerLen = 8

// MaxRecord bounds one record, so a corrupt length field can never make the
// reader allocate gigabytes.
const MaxRecord = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrClosed is returned by Append and Wait after Close.
var ErrClosed = errors.New("journal: closed")

// Journal is an open log file. Append enqueues, a single flusher goroutine
// writes and fsyncs batches (group commit), Wait blocks until a record is on
// stable storage.
type Journal struct {
	f      *os.File
	onSync func(seq uint64)

	mu      sync.Mutex
	cond    *sync.Cond // waiters: signalled when durable advances or err is set
	work    *sync.Cond // the flusher: signalled when work arrives or on Close
	pending []record
	next    uint64 // seq of the next appended record (1-based)
	durable uint64 // highest seq known to be on stable storage
	err     error  // sticky write/sync failure
	closing bool
	done    chan struct{}
	stats   Stats

	// Cut is the number of bytes removed from a torn tail when the file was opened.
	Cut int64
}

// record is an appended record: its bytes, or the function that encodes
// them (AppendLazy).
type record struct {
	b   []byte
	enc func() ([]byte, error)
}

// Stats counts what the flusher wrote since Open.
type Stats struct {
	Syncs    int64         // fsyncs of appended records (batches)
	Records  int64         // records made durable
	SyncTime time.Duration // time spent in write and fsync calls
}

// Open opens (or creates) the journal at path, calls replay for every intact
// record in order, cuts a torn tail, and starts the flusher. onSync, if not
// nil, is called from the flusher after each fsync with the highest durable
// sequence number; it must not call back into the journal.
func Open(path string, replay func(seq uint64, rec []byte) error, onSync func(seq uint64)) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: open: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, err
	}
	j := &Journal{f: f, onSync: onSync, next: 1, done: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	j.work = sync.NewCond(&j.mu)
	if err := j.load(replay); err != nil {
		f.Close()
		return nil, err
	}
	go j.flusher()
	return j, nil
}

// load validates the header, replays intact records and truncates the file
// after the last intact one.
func (j *Journal) load(replay func(uint64, []byte) error) error {
	st, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("journal: stat: %w", err)
	}
	if st.Size() == 0 {
		if _, err := j.f.Write([]byte(magic)); err != nil {
			return fmt.Errorf("journal: write header: %w", err)
		}
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal: sync header: %w", err)
		}
		return syncDir(filepath.Dir(j.f.Name())) // the new file's directory entry must survive a crash too
	}
	r := bufio.NewReaderSize(j.f, 1<<20)
	hdr := make([]byte, headerLen)
	if _, err := io.ReadFull(r, hdr); err != nil || string(hdr) != magic {
		if st.Size() < headerLen && string(hdr[:st.Size()]) == magic[:st.Size()] {
			// A crash while writing the header of a fresh log: start over.
			return j.truncate(0, st.Size())
		}
		return fmt.Errorf("journal: %s is not a journal (header %q, want %q)", j.f.Name(), hdr, magic)
	}
	off := int64(headerLen)
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if err == io.EOF {
				break
			}
			return j.truncate(off, st.Size()) // partial record header
		}
		n := binary.LittleEndian.Uint32(head[0:4])
		sum := binary.LittleEndian.Uint32(head[4:8])
		if n > MaxRecord || off+8+int64(n) > st.Size() {
			return j.truncate(off, st.Size())
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(r, rec); err != nil {
			return j.truncate(off, st.Size())
		}
		if crc32.Checksum(rec, crcTable) != sum {
			// Only the unsynced tail can be torn; nothing after it was ever
			// acknowledged, so cutting from here loses no acknowledged write.
			return j.truncate(off, st.Size())
		}
		if err := replay(j.next, rec); err != nil {
			return fmt.Errorf("journal: replay record %d at offset %d: %w", j.next, off, err)
		}
		j.next++
		off += 8 + int64(n)
	}
	j.durable = j.next - 1
	_, err = j.f.Seek(off, io.SeekStart)
	return err
}

// syncDir fsyncs a directory. Some systems cannot (open fails or Sync is
// unsupported); there the file's own fsync is all we can do.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("journal: sync directory %s: %w", dir, err)
	}
	return nil
}

func (j *Journal) truncate(off, size int64) error {
	j.Cut = size - off
	if err := j.f.Truncate(off); err != nil {
		return fmt.Errorf("journal: cut torn tail at %d: %w", off, err)
	}
	if off == 0 {
		if _, err := j.f.WriteAt([]byte(magic), 0); err != nil {
			return fmt.Errorf("journal: write header: %w", err)
		}
		off = headerLen
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: sync after cut: %w", err)
	}
	j.durable = j.next - 1
	_, err := j.f.Seek(off, io.SeekStart)
	return err
}

// Append enqueues rec and returns its sequence number. It never blocks on I/O;
// call Wait to learn when the record is durable.
func (j *Journal) Append(rec []byte) (uint64, error) {
	if len(rec) > MaxRecord {
		return 0, errTooLarge(len(rec))
	}
	return j.append(record{b: rec})
}

// AppendLazy enqueues a record whose bytes enc produces later, on the
// flusher, just before the batch holding it is written. The record's place
// in the log is fixed now, so a caller can order records under its own lock
// and leave encoding them out of it. enc must only read data that no longer
// changes. If enc fails, or its record is too large, the journal fails as on
// a write error: that record and every later one are never durable, and
// their Wait returns the error.
func (j *Journal) AppendLazy(enc func() ([]byte, error)) (uint64, error) {
	return j.append(record{enc: enc})
}

func errTooLarge(n int) error {
	return fmt.Errorf("journal: record of %d bytes exceeds the %d byte limit", n, MaxRecord)
}

func (j *Journal) append(r record) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closing {
		return 0, ErrClosed
	}
	if j.err != nil {
		return 0, j.err
	}
	seq := j.next
	j.next++
	j.pending = append(j.pending, r)
	if len(j.pending) == 1 {
		j.work.Signal() // only the flusher waits for work; waiters wait for durability
	}
	return seq, nil
}

// Stats returns what the flusher has written so far.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}

// Wait blocks until record seq is on stable storage or the journal failed.
func (j *Journal) Wait(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.durable < seq && j.err == nil {
		j.cond.Wait()
	}
	if j.durable >= seq {
		return nil
	}
	return j.err
}

// flusher writes every pending record as one batch and syncs once per batch:
// the group commit that lets many concurrent writers share one fsync.
func (j *Journal) flusher() {
	defer close(j.done)
	var buf []byte
	for {
		j.mu.Lock()
		for len(j.pending) == 0 && !j.closing && j.err == nil {
			j.work.Wait()
		}
		if j.err != nil || (j.closing && len(j.pending) == 0) {
			j.mu.Unlock()
			return
		}
		batch := j.pending
		j.pending = nil
		last := j.next - 1
		first := last - uint64(len(batch)) + 1
		j.mu.Unlock()

		buf = buf[:0]
		var err error
		for i, r := range batch {
			rec := r.b
			if r.enc != nil {
				if rec, err = r.enc(); err == nil && len(rec) > MaxRecord {
					err = errTooLarge(len(rec))
				}
				if err != nil {
					err = fmt.Errorf("journal: encode record %d: %w", first+uint64(i), err)
					break
				}
			}
			var head [8]byte
			binary.LittleEndian.PutUint32(head[0:4], uint32(len(rec)))
			binary.LittleEndian.PutUint32(head[4:8], crc32.Checksum(rec, crcTable))
			buf = append(buf, head[:]...)
			buf = append(buf, rec...)
		}
		start := time.Now()
		if err == nil {
			if _, err = j.f.Write(buf); err == nil {
				err = j.f.Sync()
			}
			if err != nil {
				err = fmt.Errorf("journal: write: %w", err)
			}
		}
		j.mu.Lock()
		if err != nil {
			j.err = err
		} else {
			j.durable = last
			j.stats.Syncs++
			j.stats.Records += int64(len(batch))
			j.stats.SyncTime += time.Since(start)
		}
		j.cond.Broadcast()
		j.mu.Unlock()
		if err == nil && j.onSync != nil {
			j.onSync(last)
		}
		if cap(buf) > 4<<20 {
			buf = nil // do not pin a huge buffer after a burst
		}
	}
}

// Close flushes pending records, stops the flusher and closes the file. It is
// safe to call more than once.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		<-j.done
		return nil
	}
	j.closing = true
	j.work.Signal()
	j.mu.Unlock()
	<-j.done
	j.mu.Lock()
	err := j.err
	if err == nil {
		// Wake any waiter still blocked (nothing is pending, so none should be).
		j.err = ErrClosed
		j.cond.Broadcast()
	}
	j.mu.Unlock()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}
