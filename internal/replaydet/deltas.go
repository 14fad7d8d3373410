package replaydet

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	rq "github.com/harn-conform/conform/internal/replay"
)

// The receipt-delta checks (spec 002, "Receipt deltas"; the narrative's
// "Replay contract"; docs/replay.md, "The receipt"). Each takes a decoded
// replay receipt and what the replay request asked for, and returns nil or
// one error listing every problem it found.

// Override is one override the replay applied, as the request stated it.
type Override struct {
	Key    string
	SHA256 string // the request's sha256 ("" when it sent none)
	Reason string // the override's reason ("" when it gave none)
	// Secret marks a secret override: its delta must record a hash or an
	// artifact reference in place of the value (RPLY-DELTA-005).
	Secret bool
}

// Expect is what a replay receipt's deltas are judged against.
type Expect struct {
	// Overrides are the overrides the replay applied (every override of a
	// request whose replay completed); none for an exact replay.
	Overrides []Override
	// Reason is the request's own reason ("" when it gave none): a delta
	// may record it in place of its override's (docs/interpretations.md,
	// replay-delta-reason).
	Reason  string
	Sources Sources
}

// ExpectFrom is what the receipt of a completed replay of request (a
// ReplayTaskRequest body) is judged against: every override of the request
// applied, sorted by key.
func ExpectFrom(request []byte, src Sources) (Expect, error) {
	var req rq.Request
	if err := json.Unmarshal(request, &req); err != nil {
		return Expect{}, fmt.Errorf("the replay request: %v", err)
	}
	e := Expect{Sources: src}
	if req.Reason != nil {
		e.Reason = *req.Reason
	}
	for key, o := range req.Override {
		ov := Override{Key: key, Secret: o.Kind == "secret_value" || rq.Label(key) == "secret"}
		if o.SHA256 != nil {
			ov.SHA256 = *o.SHA256
		}
		if o.Reason != nil {
			ov.Reason = *o.Reason
		}
		e.Overrides = append(e.Overrides, ov)
	}
	sort.Slice(e.Overrides, func(i, j int) bool { return e.Overrides[i].Key < e.Overrides[j].Key })
	return e, nil
}

func (e Expect) override(key string) (Override, bool) {
	for _, o := range e.Overrides {
		if o.Key == key {
			return o, true
		}
	}
	return Override{}, false
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// delta is one entry of receipt.deltas, with where it is.
type delta struct {
	i int
	m map[string]any
}

func (d delta) str(k string) string { s, _ := d.m[k].(string); return s }

func (d delta) where() string {
	if k := d.str("override_key"); k != "" {
		return fmt.Sprintf("deltas/%d (override_key %q)", d.i, k)
	}
	return fmt.Sprintf("deltas/%d", d.i)
}

// deltas returns the receipt's deltas; a deltas member that is not an
// array of objects is itself a problem.
func deltas(doc map[string]any) ([]delta, []string) {
	v, ok := doc["deltas"]
	if !ok || v == nil {
		return nil, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, []string{fmt.Sprintf("deltas is %s, want an array", describe(v))}
	}
	var out []delta
	var probs []string
	for i, e := range list {
		m, isObj := e.(map[string]any)
		if !isObj {
			probs = append(probs, fmt.Sprintf("deltas/%d is %s, want an object", i, describe(e)))
			continue
		}
		out = append(out, delta{i: i, m: m})
	}
	return out, probs
}

// material returns the receipt material a delta path names
// ("/replay_input/materials/N"), or nil.
func material(doc map[string]any, path string) map[string]any {
	n, err := strconv.Atoi(strings.TrimPrefix(path, "/replay_input/materials/"))
	if !strings.HasPrefix(path, "/replay_input/materials/") || err != nil || n < 0 {
		return nil
	}
	ri, _ := doc["replay_input"].(map[string]any)
	mats, _ := ri["materials"].([]any)
	if n >= len(mats) {
		return nil
	}
	m, _ := mats[n].(map[string]any)
	return m
}

// materialKey is the override key a material is tagged with
// (metadata.override_key, else its id).
func materialKey(m map[string]any) string {
	if meta, ok := m["metadata"].(map[string]any); ok {
		if k, ok := meta["override_key"].(string); ok && k != "" {
			return k
		}
	}
	k, _ := m["id"].(string)
	return k
}

// attribute is the override key a delta stands for: its override_key,
// else the key of the material its path names, else the key its event
// recorded. RPLY-DELTA-001 counts by it, so that a delta that fails to
// name its key (RPLY-DELTA-002's finding) still counts as a delta.
func attribute(doc map[string]any, d delta, src Sources) string {
	if k := d.str("override_key"); k != "" {
		return k
	}
	if m := material(doc, d.str("path")); m != nil {
		if k := materialKey(m); k != "" {
			return k
		}
	}
	return src[d.str("event_id")]
}

func joined(probs []string) error {
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(probs, "; "))
}

// DeltaPerOverride is RPLY-DELTA-001: the receipt has exactly one delta per
// applied override, and none for anything else.
func DeltaPerOverride(doc map[string]any, e Expect) error {
	ds, probs := deltas(doc)
	count := map[string]int{}
	for _, d := range ds {
		k := attribute(doc, d, e.Sources)
		count[k]++
		if _, ok := e.override(k); !ok {
			if k == "" {
				probs = append(probs, fmt.Sprintf("%s stands for no override the suite can tell (no override_key, no path to a tagged material, no known event)", d.where()))
			} else {
				probs = append(probs, fmt.Sprintf("%s records a substitution under %q, which the request did not override", d.where(), k))
			}
		}
	}
	var missing []string
	for _, o := range e.Overrides {
		switch n := count[o.Key]; {
		case n == 0:
			missing = append(missing, o.Key)
		case n > 1:
			probs = append(probs, fmt.Sprintf("%d deltas record the override %q, want one", n, o.Key))
		}
	}
	if len(missing) > 0 {
		probs = append(probs, fmt.Sprintf("no delta records the applied override(s) %s (%d deltas for %d applied overrides)", strings.Join(quoteAll(missing), ", "), len(ds), len(e.Overrides)))
	}
	return joined(probs)
}

// DeltaNames is RPLY-DELTA-002: each delta names its override key, and the
// original event it replaced or the material path of the substitute; an
// event_id must name a source event that recorded that key, a path a
// material tagged with it.
func DeltaNames(doc map[string]any, e Expect) error {
	ds, probs := deltas(doc)
	for _, d := range ds {
		key := d.str("override_key")
		if key == "" {
			probs = append(probs, fmt.Sprintf("%s names no override_key", d.where()))
		}
		ev, hasEv := d.m["event_id"]
		path, hasPath := d.m["path"]
		if !hasEv && !hasPath {
			probs = append(probs, fmt.Sprintf("%s names neither the original event_id nor a material path", d.where()))
		}
		if hasEv {
			id, _ := ev.(string)
			rec, known := e.Sources[id]
			switch {
			case !known:
				probs = append(probs, fmt.Sprintf("%s names event_id %s, which is no event of the source task that recorded a dependency", d.where(), describe(ev)))
			case key != "" && rec != key:
				probs = append(probs, fmt.Sprintf("%s names event_id %q, which recorded %q", d.where(), id, rec))
			}
		}
		if hasPath {
			p, _ := path.(string)
			switch m := material(doc, p); {
			case strings.HasPrefix(p, "/replay_input/materials/") && m == nil:
				probs = append(probs, fmt.Sprintf("%s has path %q, which names no material of the receipt", d.where(), p))
			case m != nil && key != "" && materialKey(m) != key:
				probs = append(probs, fmt.Sprintf("%s has path %q, whose material is tagged %q", d.where(), p, materialKey(m)))
			}
		}
	}
	return joined(probs)
}

// DeltaHashes is RPLY-DELTA-003: each delta carries before_sha256 and
// after_sha256 ("sha256:" and 64 lowercase hex digits: every dependency of
// the fixture is hashable), after_sha256 the sha256 the request sent, and
// the two differ (every substitute of the fixture differs from what it
// replaces, so equal hashes mean one of them is not what it says).
func DeltaHashes(doc map[string]any, e Expect) error {
	ds, probs := deltas(doc)
	for _, d := range ds {
		before, after := d.m["before_sha256"], d.m["after_sha256"]
		for _, h := range []struct {
			name string
			v    any
		}{{"before_sha256", before}, {"after_sha256", after}} {
			if s, ok := h.v.(string); !ok || !digestRE.MatchString(s) {
				probs = append(probs, fmt.Sprintf("%s: %s is %s, want sha256: and 64 lowercase hex digits", d.where(), h.name, describeOrAbsent(h.v, h.v != nil || hasMember(d.m, h.name))))
			}
		}
		o, ok := e.override(attribute(doc, d, e.Sources))
		if ok && o.SHA256 != "" && after != o.SHA256 {
			probs = append(probs, fmt.Sprintf("%s: after_sha256 is %s, the request sent sha256 %q", d.where(), describe(after), o.SHA256))
		}
		if b, _ := before.(string); b != "" && b == after {
			probs = append(probs, fmt.Sprintf("%s: before_sha256 and after_sha256 are both %q, but the substitute differs from the recorded material", d.where(), b))
		}
	}
	return joined(probs)
}

func hasMember(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func describeOrAbsent(v any, present bool) string {
	if !present {
		return "absent"
	}
	return describe(v)
}

// DeltaReasons is RPLY-DELTA-004: each delta records a reason, the one the
// caller gave (the override's, or the request's) when it gave one.
func DeltaReasons(doc map[string]any, e Expect) error {
	ds, probs := deltas(doc)
	for _, d := range ds {
		r, _ := d.m["reason"].(string)
		if strings.TrimSpace(r) == "" {
			probs = append(probs, fmt.Sprintf("%s records no reason (reason %s)", d.where(), describeOrAbsent(d.m["reason"], hasMember(d.m, "reason"))))
			continue
		}
		o, ok := e.override(attribute(doc, d, e.Sources))
		if !ok || (o.Reason == "" && e.Reason == "") {
			continue // the caller gave none: the Harness policy's reason is as good as any
		}
		if r != o.Reason && r != e.Reason {
			var gave []string
			for _, s := range []string{o.Reason, e.Reason} {
				if s != "" {
					gave = append(gave, fmt.Sprintf("%q", s))
				}
			}
			probs = append(probs, fmt.Sprintf("%s records reason %q, not the caller's (%s)", d.where(), r, strings.Join(gave, " or ")))
		}
	}
	return joined(probs)
}

// NoSecrets is RPLY-DELTA-005: the raw receipt holds none of secrets, as
// such or base64- or hex-encoded, and the delta of each secret override
// records a hash or an artifact reference in its place.
func NoSecrets(raw []byte, doc map[string]any, e Expect, secrets map[string]string) error {
	var probs []string
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	s := string(raw)
	for _, name := range names {
		v := secrets[name]
		if v == "" {
			continue
		}
		for _, enc := range []struct{ how, s string }{
			{"as is", v},
			{"base64-encoded", base64.StdEncoding.EncodeToString([]byte(v))},
			{"base64url-encoded", base64.RawURLEncoding.EncodeToString([]byte(v))},
			{"hex-encoded", hex.EncodeToString([]byte(v))},
		} {
			if strings.Contains(s, enc.s) {
				// Never the value: its name and where it was found.
				probs = append(probs, fmt.Sprintf("the receipt holds %s %s at byte %d", name, enc.how, strings.Index(s, enc.s)))
			}
		}
	}
	ds, _ := deltas(doc)
	for _, o := range e.Overrides {
		if !o.Secret {
			continue
		}
		for _, d := range ds {
			if attribute(doc, d, e.Sources) != o.Key {
				continue
			}
			a, _ := d.m["after_sha256"].(string)
			art, _ := d.m["artifact_id"].(string)
			if !digestRE.MatchString(a) && art == "" {
				probs = append(probs, fmt.Sprintf("%s, a secret override's delta, records neither an after_sha256 hash nor an artifact_id in place of the value", d.where()))
			}
		}
	}
	return joined(probs)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
