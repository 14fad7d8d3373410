package wrapfault

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/refharness/fault"
)

// A racy server nobody tuned the concurrency checks to (issue 23): an API
// gateway in front of the Harness that keeps the idempotency table itself,
// the way gateways and caching middlewares often do. It looks a keyed
// write up when it arrives; a hit answers the recorded response again (or
// 409 idempotency_key_reused for another body); a miss is forwarded under
// a fresh key of the gateway's own, and its answer recorded when it comes
// back. Sequential retries all work; retries that arrive together all
// miss, and each makes its own resource.
func init() {
	wireFault(fault.Fault{Name: "idempotency-gateway-racy",
		Doc:   "a gateway keeps the Idempotency-Key table in front of the Harness: looked up when a write arrives, recorded when its answer comes back (check-then-insert); writes sent at once with one key all act",
		Fails: []string{"CORE-IDEM-003", "CORE-IDEM-008", "CORE-IDEM-009"},
		Why:   "a gateway written without the checks in mind; the Extended writes and WebSocket commands it also races are judged by the in-server faults' rows",
		Race:  true},
		racyIdempotencyGateway)
}

// gatewayAnswer is a recorded answer of the gateway.
type gatewayAnswer struct {
	fingerprint string
	status      int
	header      http.Header
	body        []byte
}

func racyIdempotencyGateway(next http.Handler, env Env) (http.Handler, error) {
	// The Harness upstream, one network hop away, as behind a real
	// gateway: it serves for as long as the process (conform serve,
	// wrapserve) does.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go (&http.Server{Handler: next}).Serve(ln)
	upstream := "http://" + ln.Addr().String()
	hop := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		mu    sync.Mutex
		table = map[string]*gatewayAnswer{}
		fresh atomic.Int64
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if n := utf8.RuneCountInString(key); r.Method == http.MethodGet || n < 1 || n > 255 {
			next.ServeHTTP(w, r) // the Harness judges the key's length
			return
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, "reading the body", http.StatusBadRequest)
			return
		}
		canon, err := jcs.Transform(raw)
		if err != nil {
			canon = raw
		}
		sum := sha256.Sum256(canon)
		fp := fmt.Sprintf("%x", sum)
		var body struct {
			WorkspaceID string `json:"workspace_id"`
		}
		json.Unmarshal(raw, &body)
		scope := strings.Join([]string{r.Header.Get("Authorization"), body.WorkspaceID, r.Method, r.URL.Path, key}, "\x00")

		mu.Lock()
		rec := table[scope]
		mu.Unlock()
		if rec != nil { // the lookup on arrival
			if rec.fingerprint != fp {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				io.WriteString(w, `{"error":{"code":"idempotency_key_reused","type":"conflict_error","param":"Idempotency-Key",`+
					`"message":"Idempotency-Key was already used with a different request body"}}`)
				return
			}
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
			w.Write(rec.body)
			return
		}
		// A miss: forwarded upstream under a key of the gateway's own, so
		// the Harness cannot tell the retries apart either.
		out, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), bytes.NewReader(raw))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header, out.Host = r.Header.Clone(), r.Host
		out.Header.Set("Idempotency-Key", fmt.Sprintf("gw-%d", fresh.Add(1)))
		resp, err := hop.Do(out)
		if err != nil {
			http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		got, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		rw := &gatewayAnswer{fingerprint: fp, status: resp.StatusCode, header: resp.Header, body: got}
		if rw.status < 500 { // the record, once the answer is back
			mu.Lock()
			if table[scope] == nil {
				table[scope] = rw
			} else {
				env.Used() // two writes of one key both reached the Harness
			}
			mu.Unlock()
		}
		for k, v := range rw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rw.status)
		w.Write(rw.body)
	}), nil
}
