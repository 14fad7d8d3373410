package acp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// unstableMembers are the members the SDK's schema.unstable.json adds to
// the stable schema's objects (unstable ACP features such as next-edit
// suggestions): an agent using them adds no custom field of its own
// (TestUnstableMembersMatchSDK keeps the list equal to the SDK's file).
var unstableMembers = map[string][]string{
	"AgentCapabilities":   {"nes", "positionEncoding", "providers"},
	"McpCapabilities":     {"acp"},
	"SessionCapabilities": {"delete", "fork"},
}

// capabilityDefs maps the initialize result's members to the schema
// definitions whose members ACP-EXT-001 compares.
var capabilityDefs = map[string]string{
	"agentCapabilities":   "AgentCapabilities",
	"promptCapabilities":  "PromptCapabilities",
	"mcpCapabilities":     "McpCapabilities",
	"sessionCapabilities": "SessionCapabilities",
	"auth":                "AgentAuthCapabilities",
}

var (
	propsOnce sync.Once
	props     map[string][]string
	propsErr  error
)

// Members lists the members a schema definition defines (its properties),
// plus the unstable schema's additions.
func Members(def string) ([]string, error) {
	propsOnce.Do(func() {
		var doc struct {
			Defs map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"$defs"`
		}
		if err := json.Unmarshal(schemaJSON, &doc); err != nil {
			propsErr = fmt.Errorf("acp: the embedded ACP schema: %w", err)
			return
		}
		props = map[string][]string{}
		for name, d := range doc.Defs {
			for p := range d.Properties {
				props[name] = append(props[name], p)
			}
			props[name] = append(props[name], unstableMembers[name]...)
			sort.Strings(props[name])
		}
	})
	if propsErr != nil {
		return nil, propsErr
	}
	m, ok := props[def]
	if !ok {
		return nil, fmt.Errorf("acp: the ACP schema has no definition %s", def)
	}
	return m, nil
}

// CustomRootMembers lists the members of an initialize result, and of the
// capability objects in it, that the ACP schema does not define: custom
// fields at the root of a type of the specification, which ACP's
// extensibility page forbids (custom data belongs under _meta). Each is
// named by its path ("agentCapabilities.harbor").
func CustomRootMembers(result map[string]any) ([]string, error) {
	var out []string
	var walk func(path, def string, obj map[string]any) error
	walk = func(path, def string, obj map[string]any) error {
		known, err := Members(def)
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !slices.Contains(known, k) {
				out = append(out, p)
				continue
			}
			if sub, ok := capabilityDefs[k]; ok {
				if m, ok := obj[k].(map[string]any); ok {
					if err := walk(p, sub, m); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	err := walk("", "InitializeResponse", result)
	return out, err
}
