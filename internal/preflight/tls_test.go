package preflight

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// https:// to a plain HTTP server: the hint says to use http://, at once,
// even while --wait-for-target would wait (the mistake does not heal).
// http:// to an HTTPS server: the hint says to use https://.
func TestReachSchemeMismatch(t *testing.T) {
	plain := serve(t, discovery)
	httpsURL := "https://" + strings.TrimPrefix(plain, "http://")
	_, p := Reach(context.Background(), newClient(t, httpsURL), time.Hour)
	if p == nil || p.Stage != StageReach || !strings.Contains(p.Hint, "use http://") || !strings.Contains(p.Hint, "--target "+plain) {
		t.Fatalf("https to an HTTP server: %+v", p)
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(discovery))
	t.Cleanup(tlsSrv.Close)
	httpURL := "http://" + strings.TrimPrefix(tlsSrv.URL, "https://")
	_, p = Reach(context.Background(), newClient(t, httpURL), 0)
	if p == nil || !strings.Contains(p.Hint, "use https://") {
		t.Fatalf("http to an HTTPS server: %+v", p)
	}
}
