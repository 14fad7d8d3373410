// Package harbor reads the ACP extensions for Agent Harbor (spec text 004)
// the way the acp-harbor profile judges them: where the capability bundle
// may live and what its blocks say, which method names an agent may answer,
// how a Harbor notification may travel, what counts as a refusal, and the
// shapes of snapshots, branches, pipeline steps and Problem+JSON
// documents. Each check is a plain function returning an error that says
// what was wrong; every reading the text allows is accepted
// (docs/interpretations.md, "ACP Harbor").
package harbor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Method prefixes: the text's headings and its opening sentence name
// methods "_ah/…" ("leading underscore per spec"); several of its request
// examples send "harbor/…". An agent may answer either.
const (
	PrefixAH     = "_ah/"
	PrefixHarbor = "harbor/"
)

// Object decodes raw as a JSON object (nil and an error otherwise).
func Object(raw []byte) (map[string]any, error) {
	v, err := jsonv.Decode(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", clip(string(raw)))
	}
	return m, nil
}

// Block is one block of the bundle ("snapshots", "workspace"…).
type Block struct {
	Name string
	Raw  map[string]any
}

// Flag reports a supports… flag (false when absent or not true).
func (b *Block) Flag(name string) bool {
	if b == nil {
		return false
	}
	v, _ := b.Raw[name].(bool)
	return v
}

// Bundle is the Harbor capability bundle an agent advertised.
type Bundle struct {
	// Where names where it was found, for messages.
	Where string
	// Misplaced: found outside agentCapabilities._meta (ACP-CAP-001).
	Misplaced bool
	// The blocks the agent advertises (nil: not advertised).
	Snapshots, Pipeline, Workspace *Block
	// Other blocks, kept as found (future extensions are not judged).
	Other []string
}

// Claimed reports whether the agent advertises any Harbor block.
func (b *Bundle) Claimed() bool {
	return b != nil && (b.Snapshots != nil || b.Pipeline != nil || b.Workspace != nil || len(b.Other) > 0)
}

// Block names the text uses. The snapshots block has a second name:
// "_ah/session/new is optional and gated by the agentHarborSnapshots
// capability block".
const (
	BlockSnapshots      = "snapshots"
	BlockSnapshotsAlias = "agentHarborSnapshots"
	BlockPipeline       = "pipelineIntrospection"
	BlockWorkspace      = "workspace"
)

// FindBundle reads an initialize result and returns the Harbor bundle, or
// nil when the agent advertises none anywhere. The bundle belongs in
// agentCapabilities._meta, under the key "agent.harbor" (the example) or as
// nested objects agent → harbor (the prose's "_meta.agent.harbor");
// "agentHarborSnapshots" is accepted beside them for the snapshots block.
// Found elsewhere — the result's own _meta, or agentCapabilities' root — it
// is returned with Misplaced set, so the checks can go on with it while
// ACP-CAP-001 fails.
func FindBundle(result map[string]any) *Bundle {
	caps, _ := result["agentCapabilities"].(map[string]any)
	capsMeta, _ := caps["_meta"].(map[string]any)
	resMeta, _ := result["_meta"].(map[string]any)
	type place struct {
		where     string
		obj       map[string]any
		misplaced bool
	}
	places := []place{
		{`agentCapabilities._meta`, capsMeta, false},
		{`the initialize result's own _meta`, resMeta, true},
		{`the root of agentCapabilities`, caps, true},
	}
	for _, pl := range places {
		if pl.obj == nil {
			continue
		}
		var body map[string]any
		where := pl.where
		if m, ok := pl.obj["agent.harbor"].(map[string]any); ok {
			body, where = m, pl.where+`["agent.harbor"]`
		} else if ag, ok := pl.obj["agent"].(map[string]any); ok {
			if m, ok := ag["harbor"].(map[string]any); ok {
				body, where = m, pl.where+`.agent.harbor`
			}
		}
		alias, hasAlias := pl.obj[BlockSnapshotsAlias]
		if body == nil && !hasAlias {
			continue
		}
		b := &Bundle{Where: where, Misplaced: pl.misplaced}
		for name, v := range body {
			m, _ := v.(map[string]any)
			if m == nil {
				m = map[string]any{"__not_an_object": v}
			}
			blk := &Block{Name: name, Raw: m}
			switch name {
			case BlockSnapshots, BlockSnapshotsAlias:
				b.Snapshots = blk
			case BlockPipeline:
				b.Pipeline = blk
			case BlockWorkspace:
				b.Workspace = blk
			default:
				b.Other = append(b.Other, name)
			}
		}
		if hasAlias && b.Snapshots == nil {
			m, _ := alias.(map[string]any)
			if m == nil {
				m = map[string]any{"__not_an_object": alias}
			}
			b.Snapshots = &Block{Name: BlockSnapshotsAlias, Raw: m}
			if body == nil {
				b.Where = pl.where + `.` + BlockSnapshotsAlias
			}
		}
		sort.Strings(b.Other)
		return b
	}
	return nil
}

// CheckPlacement is ACP-CAP-001.
func (b *Bundle) CheckPlacement() error {
	if b != nil && b.Misplaced {
		return fmt.Errorf("the Harbor bundle is in %s; the text places it in agentCapabilities._meta (\"agent.harbor\")", b.Where)
	}
	return nil
}

// CheckBlocks is ACP-CAP-002: each block the agent advertises is an object
// with an integer version of at least 1 and boolean supports… flags.
func (b *Bundle) CheckBlocks() error {
	var probs []string
	for _, blk := range []*Block{b.Snapshots, b.Pipeline, b.Workspace} {
		if blk == nil {
			continue
		}
		if v, ok := blk.Raw["__not_an_object"]; ok {
			probs = append(probs, fmt.Sprintf("block %s is %v, want an object", blk.Name, v))
			continue
		}
		if n, ok := Int(blk.Raw["version"]); !ok || n < 1 {
			probs = append(probs, fmt.Sprintf("block %s: version is %s, want an integer ≥ 1", blk.Name, show(blk.Raw["version"])))
		}
		keys := slices.Sorted(maps.Keys(blk.Raw))
		for _, k := range keys {
			if strings.HasPrefix(k, "supports") {
				if _, ok := blk.Raw[k].(bool); !ok {
					probs = append(probs, fmt.Sprintf("block %s: %s is %s, want a boolean", blk.Name, k, show(blk.Raw[k])))
				}
			}
		}
	}
	return joined(probs)
}

// Int reads an integer JSON value (json.Number or float64 without a
// fraction).
func Int(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

func show(v any) string {
	if v == nil {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b))
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func joined(probs []string) error {
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(probs, "; "))
}

// Fields checks that m has each named member, with the given kind:
// "string", "nonempty" (a non-empty string), "int", "number", "bool",
// "object", "array", "time" (RFC 3339), "any". A member named "a|b" may
// use either spelling.
func Fields(what string, m map[string]any, spec map[string]string) error {
	var probs []string
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		kind := spec[name]
		var v any
		found := ""
		for _, alt := range strings.Split(name, "|") {
			if x, ok := m[alt]; ok {
				v, found = x, alt
				break
			}
		}
		if found == "" {
			probs = append(probs, fmt.Sprintf("%s has no %s", what, strings.ReplaceAll(name, "|", " (or ")+strings.Repeat(")", strings.Count(name, "|"))))
			continue
		}
		if err := Kind(v, kind); err != nil {
			probs = append(probs, fmt.Sprintf("%s.%s %v", what, found, err))
		}
	}
	return joined(probs)
}

// Optional is Fields for members that may be absent but, when present,
// must have the kind.
func Optional(what string, m map[string]any, spec map[string]string) error {
	var probs []string
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		v, ok := m[name]
		if !ok || v == nil {
			continue
		}
		if err := Kind(v, spec[name]); err != nil {
			probs = append(probs, fmt.Sprintf("%s.%s %v", what, name, err))
		}
	}
	return joined(probs)
}

// Kind checks one value against a kind of Fields.
func Kind(v any, kind string) error {
	ok := false
	switch kind {
	case "any":
		ok = true
	case "string":
		_, ok = v.(string)
	case "nonempty":
		s, isStr := v.(string)
		ok = isStr && s != ""
	case "int":
		_, ok = Int(v)
	case "uint":
		n, isInt := Int(v)
		ok = isInt && n >= 0
	case "number":
		_, ok = jsonv.Number(v)
	case "bool":
		_, ok = v.(bool)
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "time":
		if s, isStr := v.(string); isStr {
			_, err := time.Parse(time.RFC3339Nano, s)
			ok = err == nil
		}
	}
	if ok {
		return nil
	}
	want := map[string]string{"nonempty": "a non-empty string", "int": "an integer", "uint": "a non-negative integer",
		"time": "an RFC 3339 time", "object": "an object", "array": "an array", "bool": "a boolean",
		"number": "a number", "string": "a string"}[kind]
	return fmt.Errorf("is %s, want %s", show(v), want)
}
