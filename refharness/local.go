package refharness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	openapidoc "github.com/harn-conform/conform/fixtures/openapi"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the local server's routes and vendor events.
var (
	FaultVendorEventUnprefixed = declare(fault.Fault{Name: "vendor-event-unprefixed",
		Doc:   "the workspace-file vendor event is named without a vendor prefix",
		Warns: []string{"EXT-EVENT-001"}})
	FaultLocalRuntimeMisshapen = declare(fault.Fault{Name: "local-runtime-misshapen",
		Doc:   "GET /v1/runtime omits adapter and reports a negative session_count",
		Fails: []string{"EXT-LOCAL-001"}})
)

// The local-server operations of the later OpenAPI revision (the protocol's
// TypeScript SDK calls them): getHealth, getVersion, getOpenApiDocument,
// getRuntime, listCapabilities, listTools, getTool, readWorkspaceFile and
// writeWorkspaceFile. The narrative's REST surface does not name them, and a
// conformant target may leave them unoffered; the reference Harness serves
// them so a client developed against it can call them, and so the suite's
// traffic oracle has a conformant answer of each to judge (EXT-LOCAL-001).
//
// It also decides how a route the Harness does not offer is refused
// (docs/interpretations.md#unoffered-routes): a path of the OpenAPI
// document the Harness does not serve answers 501 not_implemented; a path
// the protocol does not define answers 404 route_not_found. Neither is the
// 404 resource_not_found of a missing resource, and a known path with a
// method it does not take stays 405 method_not_allowed.

// Version is what the local routes report as the runtime's version.
const Version = "conform-refharness/1"

// The refusals of routes the Harness does not offer.
const (
	CodeRouteNotFound  = "route_not_found"
	CodeNotImplemented = "not_implemented"
)

// localRoutes are the /v1 routes of the local server.
func (s *Server) localRoutes() []route {
	return []route{
		{method: "GET", pattern: "runtime", get: s.getRuntime},
		{method: "GET", pattern: "capabilities", get: s.listCapabilities},
		{method: "GET", pattern: "tools", get: s.listTools},
		{method: "GET", pattern: "tools/{}", get: s.getTool},
		{method: "GET", pattern: "workspaces/{}/files", get: s.readWorkspaceFile},
		{method: "PUT", pattern: "workspaces/{}/files", write: s.writeWorkspaceFile},
	}
}

// servePublicLocal serves the public local routes outside /v1 (health,
// version, openapi.json); false means path is none of them.
func (s *Server) servePublicLocal(w http.ResponseWriter, r *http.Request, p string) bool {
	var v any
	switch p {
	case "/health":
		v = map[string]any{"ok": true, "status": "ok", "version": Version}
	case "/version":
		v = map[string]any{"object": "version", "version": Version, "protocol_version": ProtocolVersion}
	case "/openapi.json":
		d, err := openAPIJSON()
		if err != nil {
			s.writeError(w, r, internal(err))
			return true
		}
		v = d
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.methodNotAllowed(w, r, "GET")
		return true
	}
	s.writeJSON(w, http.StatusOK, v)
	return true
}

// ---- the OpenAPI document ----

var openAPI struct {
	once      sync.Once
	doc       json.RawMessage
	templates [][]string // each path's segments; "" stands for a parameter
	err       error
}

func loadOpenAPI() {
	openAPI.once.Do(func() {
		var m map[string]any
		if err := yaml.Unmarshal(openapidoc.YAML, &m); err != nil {
			openAPI.err = fmt.Errorf("the vendored OpenAPI document: %w", err)
			return
		}
		openAPI.doc, openAPI.err = json.Marshal(m)
		paths, _ := m["paths"].(map[string]any)
		for p := range paths {
			segs := strings.Split(strings.Trim(p, "/"), "/")
			for i, sg := range segs {
				if strings.HasPrefix(sg, "{") {
					segs[i] = ""
				}
			}
			openAPI.templates = append(openAPI.templates, segs)
		}
	})
}

// openAPIJSON is the vendored OpenAPI document as JSON (getOpenApiDocument).
func openAPIJSON() (json.RawMessage, error) {
	loadOpenAPI()
	return openAPI.doc, openAPI.err
}

// protocolPath reports whether the OpenAPI document defines path p.
func protocolPath(p string) bool {
	loadOpenAPI()
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for _, t := range openAPI.templates {
		if len(t) != len(segs) {
			continue
		}
		ok := true
		for i := range t {
			if t[i] != segs[i] && (t[i] != "" || segs[i] == "") {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// unofferedError is the refusal of a route the Harness does not serve.
func unofferedError(r *http.Request, p string) *apiError {
	details := map[string]any{"method": r.Method, "path": p}
	if protocolPath(p) {
		return &apiError{Status: http.StatusNotImplemented, Code: CodeNotImplemented, route: true, Details: details,
			Message: fmt.Sprintf("%s %s is a protocol operation this Harness does not offer", r.Method, p)}
	}
	return &apiError{Status: http.StatusNotFound, Code: CodeRouteNotFound, route: true, Details: details,
		Message: fmt.Sprintf("no route for %s %s: the protocol defines no such path", r.Method, p)}
}

// ---- runtime, capabilities, tools ----

// localCapabilities are what GET /v1/capabilities and /v1/runtime list.
func (s *Server) localCapabilities() []map[string]any {
	caps := []map[string]any{
		{"id": "rest", "description": "REST resources of the Harn Agents Protocol v1"},
		{"id": "sse", "description": "Server-Sent Events streams of tasks, sessions and all events"},
		{"id": "receipts", "description": "signed receipts, their chain and the verification API"},
		{"id": "permission_requests", "description": "host-mediated approvals: list and respond to permission requests"},
		{"id": "workspace_files", "description": "UTF-8 files under a workspace root, read and written over REST"},
	}
	if s.replayOffered() {
		caps = append(caps, map[string]any{"id": "replay", "description": "task replay from the durable event log in three modes, with receipt deltas and tapes (docs/replay.md)"})
	}
	if !s.opts.Variants.Has(VariantNoScenarioHook) {
		caps = append(caps, map[string]any{"id": "conform.scenarios", "description": "tasks obey metadata[\"conform.scenario\"] (docs/scenarios.md)"})
	}
	return caps
}

func (s *Server) getRuntime(c *call) (any, *apiError) {
	rt := map[string]any{"object": "runtime", "version": Version, "protocol_version": ProtocolVersion, "adapter": "conform-refharness",
		"workspace_root": "conform://", "session_count": s.st.sessions.len(), "task_count": s.st.tasks.len(),
		"capabilities": s.localCapabilities()}
	if s.opts.Faults.Has(FaultLocalRuntimeMisshapen) {
		delete(rt, "adapter")
		rt["session_count"] = -1
	}
	return rt, nil
}

func (s *Server) listCapabilities(*call) (any, *apiError) {
	return map[string]any{"object": "capability_summary", "capabilities": s.localCapabilities()}, nil
}

// Tool is a local control-plane tool description.
type Tool struct {
	ID           string         `json:"id"`
	Object       string         `json:"object"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"input_schema"`
	OutputSchema map[string]any `json:"output_schema"`
}

// localTools are the tools of the scenario contract's steps.
var localTools = func() *table[Tool] {
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	t := newTable[Tool]()
	for _, x := range []*Tool{
		{ID: "conform.noop", Name: "conform.noop", Description: "does nothing; the tool of the tool_approval step",
			InputSchema: obj(map[string]any{}), OutputSchema: obj(map[string]any{"ok": map[string]any{"type": "boolean"}})},
		{ID: "conform.authenticated_call", Name: "conform.authenticated_call", Description: "a call authenticated with a secret (the use_secret step)",
			InputSchema: obj(map[string]any{"credential": map[string]any{"type": "string"}}), OutputSchema: obj(map[string]any{})},
		{ID: "conform.vault_call", Name: "conform.vault_call", Description: "a call authenticated with a vault secret (the use_vault_secret step)",
			InputSchema: obj(map[string]any{"vault_id": map[string]any{"type": "string"}, "name": map[string]any{"type": "string"}}), OutputSchema: obj(map[string]any{})},
		{ID: "conform.write_artifact", Name: "conform.write_artifact", Description: "writes an artifact owned by the task (the side effect of the tool_call step)",
			InputSchema: obj(map[string]any{"content": map[string]any{"type": "string"}}), OutputSchema: obj(map[string]any{"artifact_id": map[string]any{"type": "string"}})},
	} {
		x.Object = "tool"
		t.put(x.ID, x)
	}
	return t
}()

func (s *Server) listTools(c *call) (any, *apiError) { return listPage(s, c, localTools, nil) }

func (s *Server) getTool(c *call) (any, *apiError) {
	if t, ok := localTools.get(c.params[0]); ok {
		return t, nil
	}
	return nil, notFound("tool", c.params[0])
}

// ---- workspace files ----

// WorkspaceFile is one UTF-8 file under a workspace root.
type WorkspaceFile struct {
	Object      string `json:"object"`
	WorkspaceID string `json:"workspace_id"`
	Path        string `json:"path"`
	Encoding    string `json:"encoding"`
	Content     string `json:"content"`
	Bytes       int    `json:"bytes"`
}

// filePath cleans a workspace-relative path: "" is the root; an absolute
// path or one that leaves the root is refused.
func filePath(p, param string) (string, *apiError) {
	if p == "" || p == "." {
		return "", nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", badRequest(param, "path %q must be relative to the workspace root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", badRequest(param, "path %q leaves the workspace root", p)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

func (s *Server) readWorkspaceFile(c *call) (any, *apiError) {
	ws := c.params[0]
	if _, ok := s.st.workspaces.get(ws); !ok {
		return nil, notFound("workspace", ws)
	}
	p, e := filePath(c.q.Get("path"), "path")
	if e != nil {
		return nil, e
	}
	files := s.st.pr.files[ws]
	if f, ok := files[p]; ok {
		return f, nil
	}
	// A directory: the root, or a prefix of stored files.
	prefix := ""
	if p != "" {
		prefix = p + "/"
	}
	entries := map[string]map[string]any{}
	for fp, f := range files {
		rest, ok := strings.CutPrefix(fp, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		e, seen := entries[name]
		if !seen {
			kind := "file"
			if isDir {
				kind = "directory"
			}
			e = map[string]any{"name": name, "path": prefix + name, "kind": kind, "size": 0}
			entries[name] = e
		}
		e["size"] = e["size"].(int) + f.Bytes
	}
	if len(entries) == 0 && p != "" {
		return nil, notFound("file", p)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]any, 0, len(names))
	for _, n := range names {
		list = append(list, entries[n])
	}
	if p == "" {
		p = "."
	}
	return map[string]any{"object": "file_listing", "workspace_id": ws, "path": p, "entries": list}, nil
}

// fileWrittenEvent is the vendor event a file write emits: the taxonomy has
// no workspace file event, and a vendor event is named with the vendor.
// prefix (EXT-EVENT-001).
const fileWrittenEvent = "vendor.conform.workspace_file_written"

func (s *Server) writeWorkspaceFile(c *call) (*result, *apiError) {
	ws := c.params[0]
	if _, ok := s.st.workspaces.get(ws); !ok {
		return nil, notFound("workspace", ws)
	}
	raw, param := c.q.Get("path"), "path"
	if v, ok, e := c.body.str("path", false); e != nil {
		return nil, e
	} else if ok {
		raw = v
	}
	p, e := filePath(raw, param)
	if e != nil {
		return nil, e
	}
	if p == "" {
		return nil, badRequest("path", "path names the workspace root, want a file path")
	}
	if !c.body.has("content") {
		return nil, badRequest("content", "missing required field content")
	}
	content, _, e := c.body.str("content", false) // "" is an empty file
	if e != nil {
		return nil, e
	}
	if _, err := c.body.metadata(); err != nil {
		return nil, err
	}
	for fp := range s.st.pr.files[ws] {
		if strings.HasPrefix(fp, p+"/") {
			return nil, conflict("path %q is a directory of workspace %s", p, ws)
		}
	}
	f := &WorkspaceFile{Object: "file", WorkspaceID: ws, Path: p, Encoding: "utf-8", Content: content, Bytes: len(content)}
	kind := fileWrittenEvent
	if s.opts.Faults.Has(FaultVendorEventUnprefixed) {
		kind = "workspace_file_written"
	}
	ev := s.newEvent(kind, Pointer{"workspace", ws}, map[string]any{"path": p, "bytes": len(content), "sha256": sha256hex([]byte(content))}, ws, "", "", c.actor)
	return &result{status: http.StatusOK, body: f, c: &commit{Files: []*WorkspaceFile{f}, Events: []*Event{ev}}}, nil
}
