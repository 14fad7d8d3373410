package openapi

import (
	"net/http"
	"testing"
)

// BenchmarkValidateResponse measures what the oracle adds to each exchange
// the suite makes (go test -bench ValidateResponse -benchmem ./internal/openapi).
func BenchmarkValidateResponse(b *testing.B) {
	d, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	var tasks []any
	for range 50 {
		tasks = append(tasks, task())
	}
	receipt, err := receiptFixtureB("task-completed.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, method, path string
		status             int
		body               []byte
		violations         bool
	}{
		{"task", "GET", "/v1/tasks/t1", 200, js(task()), false},
		{"task-list-50", "GET", "/v1/tasks", 200, js(list(tasks...)), false},
		{"event", "GET", "/v1/events/e1", 200, js(event()), false},
		{"receipt", "GET", "/v1/receipts/r1", 200, receipt, false},
		{"error", "GET", "/v1/tasks/t1", 404, js(errorEnv("resource_not_found", "not_found_error")), false},
		{"task-3-violations", "GET", "/v1/tasks/t1", 200, js(with(with(with(task(), "status", "x"), "id", del), "started_at", "now")), true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := http.Header{"Content-Type": {"application/json"}}
			if vs := d.ValidateResponse(bc.method, bc.path, bc.status, h, bc.body); (len(vs) > 0) != bc.violations {
				b.Fatalf("violations: %v", vs)
			}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				d.ValidateResponse(bc.method, bc.path, bc.status, h, bc.body)
			}
		})
	}
}

func receiptFixtureB(name string) ([]byte, error) {
	return receiptsRead("valid/" + name)
}
