package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	refoh "github.com/harn-conform/conform/refharness/openharness"
	"github.com/harn-conform/conform/refharness/wrapfault"
)

// list runs conform with args and returns what it wrote.
func list(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("conform %v: exit %d, stderr %q", args, code, errb.String())
	}
	return out.String()
}

// --list-faults lists every fault --fault takes, in-server and wire, each
// once with the requirements its declaration names; in JSON exactly them.
func TestServeListsEveryFault(t *testing.T) {
	t.Parallel()
	all := slices.Concat(refharness.FaultDecls(), wrapfault.Faults())
	text := list(t, "serve", "--list-faults")
	for _, f := range all {
		var line string
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, f.Name+" ") {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, string(f.Kind)) || !strings.Contains(line, f.Own()[0]) || !strings.Contains(line, f.Doc) {
			t.Errorf("--list-faults shows %s as %q, want its kind, %s and its doc", f.Name, line, f.Own()[0])
		}
	}
	var got []faultListing
	if err := json.Unmarshal([]byte(list(t, "serve", "--list-faults", "--format", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Errorf("--list-faults --format json lists %d faults, want %d", len(got), len(all))
	}
	for _, g := range got {
		i := slices.IndexFunc(all, func(f fault.Fault) bool { return f.Name == g.Name })
		if i < 0 {
			t.Errorf("--list-faults lists %s, which is not declared", g.Name)
			continue
		}
		f := all[i]
		if g.Kind != f.Kind || g.Doc != f.Doc || g.Level == "" || !slices.Equal(g.Fails, ids(f.Fails)) || !slices.Equal(g.Tolerated, ids(f.Tolerated)) || !slices.Equal(g.Warns, ids(f.Warns)) {
			t.Errorf("--list-faults lists %+v, declared %+v", g, f)
		}
	}
	oh := list(t, "serve", "--profile", "openharness", "--list-faults")
	for _, f := range refoh.FaultDecls() {
		if !strings.Contains(oh, f.Name) || !strings.Contains(oh, f.Own()[0]) {
			t.Errorf("--profile openharness --list-faults does not show %s with %s", f.Name, f.Own()[0])
		}
	}
}

// --list-variants lists every variant --variant takes, each with its doc.
func TestServeListsEveryVariant(t *testing.T) {
	t.Parallel()
	text := list(t, "serve", "--list-variants")
	var got []variantListing
	if err := json.Unmarshal([]byte(list(t, "serve", "--list-variants", "--format", "json")), &got); err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(refharness.VariantDecls(), wrapfault.Variants())
	if len(got) != len(all) {
		t.Errorf("--list-variants --format json lists %d variants, want %d", len(got), len(all))
	}
	for i, v := range all {
		if !strings.Contains(text, v.Name) || !strings.Contains(text, v.Doc) {
			t.Errorf("--list-variants does not show %s with its doc", v.Name)
		}
		if i < len(got) && (got[i].Name != v.Name || got[i].Kind != v.Kind || !slices.Equal(got[i].Unverified, ids(v.Unverified))) {
			t.Errorf("--list-variants lists %+v, declared %+v", got[i], v)
		}
	}
}

func TestServeRefusesUnknownNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args []string }{
		{[]string{"serve", "--fault", "nosuch"}},
		{[]string{"serve", "--variant", "nosuch"}},
		{[]string{"serve", "--fault", "sse-crlf"}}, // a variant
		{[]string{"serve", "--list-faults", "--list-variants"}},
		{[]string{"serve", "--list-faults", "--format", "yaml"}},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		want := "--list-"
		if strings.Contains(strings.Join(tc.args, " "), "yaml") {
			want = "--format"
		}
		if code != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("conform %v: exit %d, stderr %q; want exit 2 mentioning %s", tc.args, code, errb.String(), want)
		}
	}
}

// conform serve takes a wire fault as it takes an in-server one: the
// middleware is in front of the Harness it serves. With accept-any-key (in
// the Harness) a wrong key is served, and with unknown-receipt-200 (on the
// wire) an unknown receipt answers 200 {}.
func TestServeWireAndInServerFaults(t *testing.T) {
	t.Setenv("CONFORM_SERVE_API_KEY", "sk-serve-wire-test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--fault", "accept-any-key", "--fault", "unknown-receipt-200"}, nil, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("serve: %v (stderr %q)", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	url := strings.TrimSpace(strings.TrimPrefix(line, "conform serve: listening on "))
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/receipts/receipt_none", nil)
	req.Header.Set("Authorization", "Bearer sk-not-the-key")
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "{}" {
		t.Errorf("an unknown receipt with a wrong key: %d %s, want 200 {} (both faults on)", resp.StatusCode, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exit %d, stderr %q", code, errb.String())
	}
}
