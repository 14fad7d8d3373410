package refharness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"

	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchServer is a harness for benchmarks (testing.B has no t for helpers).
func benchServer(b *testing.B, opts Options) (*Server, string) {
	b.Helper()
	opts.APIKeys = map[string]string{testKey: "actor_default"}
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	post := func(path, body string) string {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, benchReq("POST", path, body))
		id, _, _ := strings.Cut(strings.TrimPrefix(rec.Body.String(), `{"id":"`), `"`)
		return id
	}
	wsID := post("/v1/workspaces", `{"name":"bench","root":"/"}`)
	return s, post("/v1/sessions", `{"workspace_id":"`+wsID+`"}`)
}

func benchReq(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	return req
}

// BenchmarkDurableSubmit measures acknowledged (fsync'd) task submits per
// second with many concurrent clients sharing group commits. Each task also
// runs the echo agent (three more durable commits, the last with the task's
// signed receipt) in the background; tasks/s counts until every one of them
// is COMPLETED, so a backlog of unfinished tasks cannot flatter submits/s.
func BenchmarkDurableSubmit(b *testing.B) {
	s, sess := benchServer(b, Options{DataDir: b.TempDir()})
	body := `{"input":{"role":"user","parts":[{"type":"text","text":"bench","visibility":"public"}]}}`
	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, benchReq("POST", "/v1/sessions/"+sess+"/tasks", body))
			if rec.Code != 202 {
				b.Errorf("submit: %d %s", rec.Code, rec.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
	b.StopTimer()
	s.wg.Wait() // every worker was started before its submit was answered
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	// How the disk did: a slow, shared disk shows here rather than as a mystery.
	if st := s.jl.Stats(); st.Syncs > 0 {
		b.ReportMetric(float64(st.SyncTime.Microseconds())/float64(st.Syncs)/1000, "ms/fsync")
		b.ReportMetric(float64(st.Records)/float64(st.Syncs), "records/fsync")
	}
}

// BenchmarkGetTask measures GET /v1/tasks/{id} through the handler.
func BenchmarkGetTask(b *testing.B) {
	s, sess := benchServer(b, Options{DataDir: b.TempDir()})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, benchReq("POST", "/v1/sessions/"+sess+"/tasks", `{"input":{"text":"x"}}`))
	id, _, _ := strings.Cut(strings.TrimPrefix(rec.Body.String(), `{"id":"`), `"`)
	s.wg.Wait()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, benchReq("GET", "/v1/tasks/"+id, ""))
			if rec.Code != 200 {
				b.Errorf("get: %d", rec.Code)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

// BenchmarkSSEFanout has 1,000 subscribers on one session stream over real
// HTTP connections; each iteration appends one message and waits until every
// subscriber has its event. It checks that each subscriber got every event in
// order and reports the p99 delivery latency (append sent -> frame received).
func BenchmarkSSEFanout(b *testing.B) {
	const subscribers = 1000
	s, sess := benchServer(b, Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: subscribers, MaxConnsPerHost: 0}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type sub struct {
		ids  []string
		recv []time.Time
	}
	subs := make([]*sub, subscribers)
	got := make(chan int, subscribers*4)
	var ready, done sync.WaitGroup
	for i := range subs {
		subs[i] = &sub{}
		ready.Add(1)
		done.Add(1)
		go func(sb *sub) {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/sessions/"+sess+"/events/stream", nil)
			req.Header.Set(VersionHeader, ProtocolVersion)
			req.Header.Set("Authorization", "Bearer "+testKey)
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				ready.Done()
				return
			}
			defer res.Body.Close()
			br := bufio.NewReaderSize(res.Body, 64<<10)
			first := true
			var id string
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				switch {
				case bytes.HasPrefix(line, []byte("id: ")):
					id = string(bytes.TrimSpace(line[4:]))
				case bytes.Equal(line, []byte("event: session.created\n")):
					id = ""
				case bytes.Equal(line, []byte("event: session.message_appended\n")):
					sb.ids = append(sb.ids, id)
					sb.recv = append(sb.recv, time.Now())
					got <- 1
				case first && bytes.HasPrefix(line, []byte(":")):
					first = false
					ready.Done() // connected: the stream's opening comment arrived
				}
			}
		}(subs[i])
	}
	ready.Wait()
	body := `{"message":{"role":"user","parts":[{"type":"text","text":"fan-out","visibility":"public"}]}}`
	sent := make([]time.Time, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sent = append(sent, time.Now())
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, benchReq("POST", "/v1/sessions/"+sess+"/messages", body))
		if rec.Code != 201 {
			b.Fatalf("append: %d %s", rec.Code, rec.Body)
		}
		for n := 0; n < subscribers; n++ {
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				b.Fatalf("event %d: only %d of %d subscribers received it within 10s", i, n, subscribers)
			}
		}
	}
	b.StopTimer()
	cancel()
	done.Wait()
	var lat []time.Duration
	for si, sb := range subs {
		if len(sb.ids) != b.N {
			b.Fatalf("subscriber %d got %d events, want %d", si, len(sb.ids), b.N)
		}
		if !slices.IsSorted(sb.ids) {
			b.Fatalf("subscriber %d got events out of order", si)
		}
		for i, t := range sb.recv {
			lat = append(lat, t.Sub(sent[i]))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkMemoryPer10kTasks reports the live heap held by 10,000 completed
// echo tasks (each with its events, agent message and outcome), in memory mode.
func BenchmarkMemoryPer10kTasks(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, sess := benchServer(b, Options{})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for j := 0; j < 10_000; j++ {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, benchReq("POST", "/v1/sessions/"+sess+"/tasks", fmt.Sprintf(`{"input":{"text":"task %d"}}`, j)))
			if rec.Code != 202 {
				b.Fatalf("submit: %d", rec.Code)
			}
		}
		s.wg.Wait()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/10k-tasks")
		runtime.KeepAlive(s)
		s.Close()
	}
}

// BenchmarkReceiptPhases splits the cost of one receipt (the task of
// BenchmarkIssueReceipt) the way a worker finishing its task pays it (see
// finishTask): gathering what the task did under s.mu, building and
// presealing without it, then linking it to the chain head, hashing and
// signing under s.mu again. locked-µs is what it holds the lock for.
func BenchmarkReceiptPhases(b *testing.B) {
	t := &testing.T{} // the harness helpers want a *testing.T; setup failures would end the benchmark
	s, err := New(Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := &harness{t: t, s: s}
	id := h.runTask(h.session(), []map[string]any{step("emit", "count", 5), step("artifact", "content", "x"),
		step("use_secret", "secret", canary)}, StatusCompleted)
	var locked, unlocked time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		s.mu.Lock()
		task, _ := s.st.tasks.get(id)
		cp := *task
		o := &Outcome{Envelope: Envelope{ID: "outcome_bench"}, Artifacts: []*Artifact{}}
		d := s.draftReceiptLocked(&cp)
		s.mu.Unlock()
		t1 := time.Now()
		p, err := s.prepareReceipt(d, &cp, o)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		s.mu.Lock()
		if _, err := s.finishReceipt(p, s.st.rc.head()); err != nil {
			b.Fatal(err)
		}
		s.mu.Unlock()
		t3 := time.Now()
		locked += t1.Sub(t0) + t3.Sub(t2)
		unlocked += t2.Sub(t1)
	}
	b.ReportMetric(float64(locked.Nanoseconds())/float64(b.N)/1000, "locked-µs")
	b.ReportMetric(float64(unlocked.Nanoseconds())/float64(b.N)/1000, "unlocked-µs")
}
