package wsadapter

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// BenchmarkWSFanout is BenchmarkSSEFanout (refharness/bench_test.go) over
// WebSocket: 1,000 harn-ws.v1 subscribers on one session stream over real
// loopback connections; each iteration appends one message and waits until
// every subscriber has its event frame. It checks that each subscriber got
// every event, once, in order, marked live, and reports the delivery
// latency (append sent -> frame received), p50 and p99.
func BenchmarkWSFanout(b *testing.B) {
	const subscribers = 1000
	s, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	Mount(s, Options{})
	post := func(path, body string) string {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, benchReq("POST", path, body))
		if rec.Code/100 != 2 {
			b.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(rec.Body.String(), `{"id":"`), `"`)
		return id
	}
	sess := post("/v1/sessions", `{"workspace_id":"`+post("/v1/workspaces", `{"name":"bench","root":"/"}`)+`"}`)
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: subscribers, MaxConnsPerHost: 0}}
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/sessions/" + sess + "/events/stream"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type sub struct {
		ids  []string
		recv []time.Time
		live bool // every appended event's frame was marked replayed:false
	}
	subs := make([]*sub, subscribers)
	got := make(chan int, subscribers*4)
	var ready, done sync.WaitGroup
	eventPrefix := []byte(`{"type":"event","event_id":"`)
	appended := []byte(`"event":"session.message_appended"`)
	for i := range subs {
		subs[i] = &sub{live: true}
		ready.Add(1)
		done.Add(1)
		go func(sb *sub) {
			defer done.Done()
			h := http.Header{}
			h.Set(refharness.VersionHeader, refharness.ProtocolVersion)
			h.Set("Authorization", "Bearer "+testKey)
			c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h, Subprotocols: []string{Profile}})
			if err != nil {
				b.Error(err)
				ready.Done()
				return
			}
			defer c.CloseNow()
			first := true
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				switch {
				case first:
					first = false
					ready.Done() // connected: ready arrived
				case bytes.HasPrefix(data, eventPrefix) && bytes.Contains(data, appended):
					id, _, _ := bytes.Cut(data[len(eventPrefix):], []byte(`"`))
					sb.ids = append(sb.ids, string(id))
					sb.recv = append(sb.recv, time.Now())
					sb.live = sb.live && bytes.Contains(data, []byte(`"replayed":false,"event"`))
					got <- 1
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
		if !slices.IsSorted(sb.ids) || len(slices.Compact(slices.Clone(sb.ids))) != b.N {
			b.Fatalf("subscriber %d got events out of order or twice", si)
		}
		if !sb.live {
			b.Fatalf("subscriber %d got a live event marked replayed", si)
		}
		for i, t := range sb.recv {
			lat = append(lat, t.Sub(sent[i]))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

func benchReq(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	return req
}
