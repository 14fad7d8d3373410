// Package check holds conform's verifiers: plain functions that look at what
// a target sent and return an error saying what was got and what was
// wanted, or nil. The Ginkgo specs are a thin shell around them, and each
// has unit tests that include a failing input.
package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// Status checks the HTTP status.
func Status(resp *client.Response, want ...int) error {
	if slices.Contains(want, resp.Status) {
		return nil
	}
	return fmt.Errorf("%s: status = %d, want %s%s", resp, resp.Status, orList(want), bodyHint(resp))
}

func orList[T any](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " or ")
}

// bodyHint quotes the start of a body so a failure message shows what came
// back without dumping it (the transcript has the whole of it).
func bodyHint(resp *client.Response) string {
	if len(resp.Body) == 0 {
		return " (empty body)"
	}
	b := resp.Body
	if len(b) > 160 {
		return fmt.Sprintf(" (body starts %q…)", b[:160])
	}
	return fmt.Sprintf(" (body %q)", b)
}
