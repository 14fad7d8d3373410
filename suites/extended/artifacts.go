package extended

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Artifacts (EXT-ARTIFACT-001, EXT-IDEM-001): registration and upload. The
// OpenAPI registers an Artifact by its metadata; it defines no body for the
// bytes, so the suite uploads them as content_base64, the reference
// Harness's extension (docs/interpretations.md#artifact-upload). A target
// that ignores the member registers the artifact without bytes, and the
// digest checks then have no served content to look at.

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// artifactBody is a registration body for session sess.
func artifactBody(sess string, extra map[string]any) map[string]any {
	b := map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "uri": nil, "session_id": sess,
		"metadata": map[string]any{"conform.run": suite.Env().RunID}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// served reads an artifact's content: the response when the target serves
// its bytes (200), nil when it does not (the bytes may live at its uri).
func served(ctx context.Context, id string) *client.Response {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(id) + "/content"}, reqArtifact)
	if resp.Status == http.StatusOK {
		return resp
	}
	return nil
}

var _ = Describe("Artifact registration and upload", func() {
	It("registers (201) and uploads Artifacts whose served bytes hash to their sha256", suite.Req(reqArtifact), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		content := []byte("conform artifact " + suite.Key("bytes"))
		sum := sha256hex(content)
		bodies := []struct {
			what string
			body map[string]any
		}{
			{"registered by its digest", artifactBody(sess, map[string]any{"sha256": sum})},
			{"uploaded with its bytes", artifactBody(sess, map[string]any{"sha256": sum, "content_base64": base64.StdEncoding.EncodeToString(content)})},
		}
		hashed := 0
		for _, b := range bodies {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: b.body}, reqArtifact)
			if !suite.Check(reqArtifact, check.Status(resp, http.StatusCreated)) && resp.Status/100 != 2 {
				continue
			}
			a, err := resp.Object()
			if !suite.Check(reqArtifact, err) {
				continue
			}
			id := xID(a)
			suite.Check(reqArtifact, check.Fields(resp, "artifact", a))
			want := map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "sha256": sum}
			suite.Check(reqArtifact, xFindings(resp, "artifact "+b.what, sameValuesFold(a, want)))
			read := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(id)}, reqArtifact)
			if suite.Check(reqArtifact, check.Status(read, http.StatusOK)) {
				got, err := read.Object()
				if suite.Check(reqArtifact, err) {
					suite.Check(reqArtifact, check.SameID(read, got, id))
					suite.Check(reqArtifact, xFindings(read, "artifact "+b.what, sameValuesFold(got, want)))
				}
			}
			if c := served(ctx, id); c != nil {
				hashed++
				suite.Check(reqArtifact, check.ContentHash(c, xStr(a, "sha256")))
			}
		}
		// Bytes that do not hash to the stated sha256: refused, or stored
		// so that what is served still hashes to what the artifact says.
		bad := artifactBody(sess, map[string]any{"sha256": sha256hex([]byte("other bytes")), "content_base64": base64.StdEncoding.EncodeToString(content)})
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: bad}, reqArtifact)
		if a, err := resp.Object(); resp.Status/100 == 2 && err == nil && xID(a) != "" {
			if c := served(ctx, xID(a)); c != nil {
				hashed++
				if err := check.ContentHash(c, xStr(a, "sha256")); err != nil {
					suite.Check(reqArtifact, fmt.Errorf("an upload whose stated sha256 is not its bytes' was accepted (%s) and is served unlike its digest: %w", resp, err))
				}
			}
		}
		if hashed == 0 {
			suite.Note(reqArtifact + ": the target served no artifact's bytes (GET /v1/artifacts/{id}/content), so no digest was held to served content; registration was checked")
		}
	})

	It("registers an artifact once for retries with the same Idempotency-Key", suite.Req(reqArtifactIdem), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		key := suite.Key("conform-artifact")
		body := artifactBody(sess, map[string]any{"metadata": map[string]any{"conform.run": suite.Env().RunID, "conform.key": key}})
		var ids []string
		for i := range 2 {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: body, IdempotencyKey: key}, reqArtifactIdem)
			a, err := resp.Object()
			if resp.Status/100 != 2 || err != nil || xID(a) == "" {
				if i == 0 {
					xPrereq("registering an Artifact (POST /v1/artifacts)", resp, reqArtifact)
				}
				suite.Must(reqArtifactIdem, fmt.Errorf("%s: a retry of an artifact registration with the same Idempotency-Key and body was refused%s", resp, xHint(resp)))
			}
			ids = append(ids, xID(a))
		}
		if ids[0] != ids[1] {
			suite.Check(reqArtifactIdem, fmt.Errorf("POST /v1/artifacts retried with Idempotency-Key %q and the same body answered artifact %s, then %s, want the same artifact", key, ids[0], ids[1]))
		}
		// No second artifact exists, whatever the answers said.
		var mine []string
		for _, a := range xPrereqList(ctx, "listing the session's artifacts (GET /v1/artifacts?session_id=)", "CORE-READ-007", "/v1/artifacts", url.Values{"session_id": {sess}}) {
			if meta, _ := a["metadata"].(map[string]any); meta["conform.key"] == key || a["session_id"] == sess {
				mine = append(mine, xID(a))
			}
		}
		if len(mine) != 1 {
			suite.Check(reqArtifactIdem, fmt.Errorf("after two registrations with Idempotency-Key %q, the session lists %d artifacts %v, want 1", key, len(mine), mine))
		}
	})
})

// sameValuesFold is sameValues with hex digests compared without case.
func sameValuesFold(m, want map[string]any) []string {
	var errs []string
	for _, e := range sameValues(m, want) {
		errs = append(errs, e)
	}
	if s, ok := m["sha256"].(string); ok && want["sha256"] != nil && len(errs) > 0 {
		var kept []string
		for _, e := range errs {
			if len(e) > 6 && e[:6] == "sha256" && equalFoldHex(s, fmt.Sprint(want["sha256"])) {
				continue
			}
			kept = append(kept, e)
		}
		errs = kept
	}
	return errs
}

func equalFoldHex(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'F' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'F' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
