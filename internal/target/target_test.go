package target

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/requirements"
)

func TestOpenReadsDiscoveryAndSelectsLevels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/base/v1" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"protocol_discovery","current_version":"v","supported_versions":["v"],
			"capabilities":{"rest":true,"sse":true,"websocket":false,"receipts":true,"replay":false,"conform.scenarios":"v1"}}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		levels []string
		run    map[requirements.Level]bool
	}{
		{[]string{"claimed"}, map[requirements.Level]bool{requirements.Core: true, requirements.Receipts: true}},
		{[]string{"all"}, map[requirements.Level]bool{requirements.Core: true, requirements.Extended: true, requirements.Receipts: true, requirements.Replay: true}},
		{[]string{"replay"}, map[requirements.Level]bool{requirements.Replay: true}},
	} {
		cfg := config.Defaults()
		cfg.Target, cfg.Levels = srv.URL+"/base", tc.levels
		env, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range env.Levels {
			if s.Run != tc.run[s.Level] || s.Reason == "" {
				t.Errorf("levels %v: %s selection = %+v, want run=%v with a reason", tc.levels, s.Level, s, tc.run[s.Level])
			}
		}
		if env.Discovery.Scenarios() != "v1" || !env.Discovery.Claims(requirements.Receipts) || env.Discovery.Claims(requirements.Replay) {
			t.Errorf("discovery = %+v", env.Discovery)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	cfg := config.Defaults()
	cfg.Target = "http://127.0.0.1:1"
	cfg.Timeouts.Request = time.Second
	_, err := Open(context.Background(), cfg)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Target != cfg.Target {
		t.Fatalf("Open = %v, want an UnreachableError naming the target", err)
	}
}

func TestBrokenDiscoveryIsRecordedNotFatal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") }))
	defer srv.Close()
	cfg := config.Defaults()
	cfg.Target = srv.URL
	env, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if env.Discovery.Error == "" || !env.Selected(requirements.Core).Run || env.Selected(requirements.Receipts).Run {
		t.Errorf("env = %+v, want the error recorded and only core run", env.Discovery)
	}
}
