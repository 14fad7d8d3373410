package acpharbor

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coder/acp-go-sdk"
)

type handler func(p map[string]json.RawMessage) (any, error)

// methods are the Harbor methods by name, without their _ah/ prefix.
func (a *agent) methods() map[string]handler {
	m := map[string]handler{
		"workspace/info":       a.workspaceInfo,
		"workspace/list":       a.workspaceList,
		"workspace/file":       a.workspaceFile,
		"workspace/diff":       a.workspaceDiff,
		"session/new":          a.sessionNew,
		"snapshot_create":      a.snapshotCreate,
		"snapshot_list":        a.snapshotList,
		"branch_create":        a.branchCreate,
		"branch_list":          a.branchList,
		"branch_delete":        a.branchDelete,
		"session_seek":         a.sessionSeek,
		"tool_pipeline_list":   a.pipelineList,
		"tool_pipeline_stream": a.pipelineStream,
	}
	if a.faults[FaultDiffMissing] {
		delete(m, "workspace/diff")
	}
	return m
}

// refuse answers a request Harbor will not honour: a JSON-RPC error
// (server error range) whose data is a Problem+JSON document, or, in the
// problem-results variant, the document as the result (both readings of
// "Violations return Problem+JSON", docs/interpretations.md).
func (a *agent) refuse(status int, kind, detail string) (any, error) {
	title := strings.ReplaceAll(kind, "-", " ")
	problem := map[string]any{"type": "https://agent-harbor.invalid/errors/" + kind, "title": title, "status": status, "detail": detail}
	if a.faults[FaultProblemStatusString] {
		problem["status"] = fmt.Sprint(status)
	}
	if a.opts.Variant == VariantProblemResults {
		return problem, nil
	}
	return nil, &acp.RequestError{Code: -32000 - status%100, Message: title + ": " + detail, Data: problem}
}

func str(p map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(p[k], &s)
	return s
}

func boolean(p map[string]json.RawMessage, k string) bool {
	var b bool
	_ = json.Unmarshal(p[k], &b)
	return b
}

func cleanPath(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	return strings.TrimPrefix(p, "/")
}

// --- workspace -----------------------------------------------------------------

func (a *agent) workspaceInfo(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[sid]
	out := map[string]any{"provider": provider, "workingCopy": workingCopy, "execPath": execPath, "usageBytes": s.ws.usage()}
	var count int
	var last string
	for _, sn := range a.snapOrder {
		if sn.session == sid {
			count++
			last = sn.id
		}
	}
	if a.faults[FaultInfoStale] {
		count, last = 0, ""
	}
	out["snapshotCount"] = count
	if last != "" {
		out["lastSnapshotId"] = last
	}
	if a.faults[FaultInfoNoUsage] {
		delete(out, "usageBytes")
	}
	return out, nil
}

func (a *agent) workspaceList(p map[string]json.RawMessage) (any, error) {
	sid, req := str(p, "sessionId"), str(p, "path")
	dir := cleanPath(req)
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := a.sessions[sid].ws
	if _, isFile := ws.files[dir]; isFile || !ws.isDir(dir) {
		return a.refuse(404, "not-a-directory", fmt.Sprintf("%q is not a directory of the workspace", req))
	}
	out := map[string]any{"path": req, "type": "directory", "children": ws.children(dir, boolean(p, "recursive"), boolean(p, "modifiedOnly"))}
	if a.faults[FaultListNoChildren] {
		delete(out, "children")
	}
	return out, nil
}

func (a *agent) workspaceFile(p map[string]json.RawMessage) (any, error) {
	sid, req := str(p, "sessionId"), str(p, "path")
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.sessions[sid].ws.files[cleanPath(req)]
	if f == nil {
		return a.refuse(404, "file-not-found", fmt.Sprintf("no file %q in the workspace", req))
	}
	added, removed := lineCounts(f.base, f.content)
	out := map[string]any{"path": req, "type": "file", "status": f.status(), "size": len(f.content)}
	if a.opts.Variant == VariantCamelCaseFile {
		out["linesAdded"], out["linesRemoved"], out["lastModified"] = added, removed, f.modified.UTC().Format(time.RFC3339)
	} else {
		out["lines_added"], out["lines_removed"], out["last_modified"] = added, removed, f.modified.UTC().Format(time.RFC3339)
	}
	if boolean(p, "includeContent") && !a.faults[FaultFileNoContent] {
		out["content"] = f.content
	}
	return out, nil
}

func (a *agent) workspaceDiff(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	var files []string
	_ = json.Unmarshal(p["files"], &files)
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := a.sessions[sid].ws
	if len(files) == 0 {
		for name, f := range ws.files {
			if f.status() != "unchanged" {
				files = append(files, name)
			}
		}
		slices.Sort(files)
	}
	entries := []map[string]any{}
	for _, name := range files {
		f := ws.files[cleanPath(name)]
		if f == nil {
			entries = append(entries, map[string]any{"path": name, "status": "not-found"})
			continue
		}
		added, removed := lineCounts(f.base, f.content)
		entries = append(entries, map[string]any{"path": name, "status": f.status(), "linesAdded": added, "linesRemoved": removed,
			"diff": unifiedDiff(cleanPath(name), f.base, f.content), "truncated": false})
	}
	if a.faults[FaultDiffDropsFile] {
		entries = []map[string]any{}
	}
	return map[string]any{"format": "unified", "files": entries}, nil
}

// --- sessions --------------------------------------------------------------------

func (a *agent) sessionNew(p map[string]json.RawMessage) (any, error) {
	if err := a.needsAuth(); err != nil {
		return nil, err
	}
	var agents []struct {
		Model struct {
			ID string `json:"id"`
		} `json:"model"`
		Count    *int           `json:"count"`
		Delivery map[string]any `json:"delivery"`
	}
	if err := json.Unmarshal(p["agents"], &agents); err != nil || len(agents) == 0 {
		return nil, acp.NewInvalidParams(map[string]any{"error": "agents must be a non-empty array of agent configurations"})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sessions := []map[string]any{}
	for _, ag := range agents {
		n := 1
		if ag.Count != nil && !a.faults[FaultMultiCountIgnored] {
			n = *ag.Count
		}
		if n < 1 || n > 16 {
			return nil, acp.NewInvalidParams(map[string]any{"error": "count must be between 1 and 16"})
		}
		for range n {
			s := a.addSession("/workspace")
			e := map[string]any{"sessionId": s.id, "model": map[string]any{"id": ag.Model.ID}}
			if ag.Delivery != nil {
				e["agentConfig"] = map[string]any{"delivery": ag.Delivery}
			}
			sessions = append(sessions, e)
		}
	}
	return map[string]any{"sessions": sessions}, nil
}

// --- snapshots ---------------------------------------------------------------------

// addSnapshot records a snapshot of a session's workspace. a.mu held.
func (a *agent) addSnapshot(sid, label string, anchor map[string]any, locked bool) *snapshot {
	s := &snapshot{id: a.newID("snap"), label: label, session: sid, created: a.opts.Now(), locked: locked, anchor: anchor}
	s.token = "cleanup-" + s.id
	a.snapshots[s.id] = s
	a.snapOrder = append(a.snapOrder, s)
	return s
}

func (a *agent) snapshotMeta(s *snapshot) map[string]any {
	m := s.meta()
	if a.faults[FaultSnapshotBadProvider] {
		m["provider"] = "tmpfs"
	}
	return m
}

// announceSnapshot fires harbor/snapshot_created ("whenever Harbor
// captures a snapshot").
func (a *agent) announceSnapshot(sid string, s *snapshot, reason string) {
	if a.faults[FaultSnapshotSilent] && reason == "manual" {
		return
	}
	a.harbor(sid, "snapshot_created", map[string]any{"sessionId": sid, "snapshot": a.snapshotMeta(s), "reason": reason})
}

func (a *agent) snapshotCreate(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	var anchor map[string]any
	if raw, ok := p["anchor"]; ok {
		if err := json.Unmarshal(raw, &anchor); err != nil {
			return nil, acp.NewInvalidParams(map[string]any{"error": "anchor must be an object"})
		}
	}
	a.mu.Lock()
	if anchor != nil {
		exec, _ := anchor["executionId"].(string)
		if ex := a.execs[exec]; exec != "" && (ex == nil || ex.session != sid) {
			a.mu.Unlock()
			return a.refuse(404, "execution-not-found", fmt.Sprintf("no execution %q in this session", exec))
		}
		anchor = map[string]any{"executionId": exec, "byteOffset": 0, "timelineTs": 0.0}
	}
	s := a.addSnapshot(sid, str(p, "label"), anchor, boolean(p, "locked"))
	a.mu.Unlock()
	a.announceSnapshot(sid, s, "manual")
	return map[string]any{"snapshot": a.snapshotMeta(s)}, nil
}

func (a *agent) snapshotList(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	var branchable *bool
	if raw, ok := p["branchable"]; ok {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			branchable = &b
		}
	}
	prov := str(p, "provider")
	var after time.Time
	if s := str(p, "createdAfter"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, acp.NewInvalidParams(map[string]any{"error": "createdAfter must be an RFC 3339 time"})
		}
		after = t
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	list := []map[string]any{}
	for _, s := range a.snapOrder {
		if s.session != sid {
			continue
		}
		if !a.faults[FaultSnapshotUnfiltered] {
			if branchable != nil && *branchable == s.locked {
				continue
			}
			if prov != "" && prov != provider {
				continue
			}
			if !after.IsZero() && !s.created.After(after) {
				continue
			}
		}
		list = append(list, a.snapshotMeta(s))
	}
	if a.faults[FaultSnapshotListEmpty] {
		list = []map[string]any{}
	}
	return map[string]any{"snapshots": list}, nil
}

// --- branches ------------------------------------------------------------------------

func (a *agent) branchCreate(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	var from struct {
		SnapshotID string   `json:"snapshotId"`
		TimelineTs *float64 `json:"timelineTs"`
	}
	var spec struct {
		Name         string            `json:"name"`
		Prompt       string            `json:"prompt"`
		SessionReuse bool              `json:"sessionReuse"`
		Agents       []json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(p["from"], &from); err != nil {
		return nil, acp.NewInvalidParams(map[string]any{"error": "from must be { snapshotId } or { timelineTs }"})
	}
	if raw, ok := p["branch"]; ok {
		if err := json.Unmarshal(raw, &spec); err != nil {
			return nil, acp.NewInvalidParams(map[string]any{"error": "branch must be an object: " + err.Error()})
		}
	}
	prompt := spec.Prompt
	if prompt == "" {
		prompt = str(p, "prompt")
	}
	a.mu.Lock()
	var src *snapshot
	switch {
	case from.SnapshotID != "":
		src = a.snapshots[from.SnapshotID]
		if src == nil || src.session != sid {
			a.mu.Unlock()
			return a.refuse(404, "snapshot-not-found", fmt.Sprintf("no snapshot %q in this session", from.SnapshotID))
		}
		if src.locked && !a.faults[FaultLockedBranchable] {
			a.mu.Unlock()
			return a.refuse(409, "snapshot-locked", fmt.Sprintf("snapshot %s is locked: it cannot be branched until the flag is cleared", src.id))
		}
	case from.TimelineTs != nil:
		if a.faults[FaultBranchNoTimeline] || *from.TimelineTs < 0 {
			a.mu.Unlock()
			return a.refuse(422, "timeline-unavailable", "branching from a timeline moment is not available")
		}
		// A moment of the timeline: materialize it as a snapshot first.
		src = a.addSnapshot(sid, "branch-point", map[string]any{"executionId": "", "byteOffset": 0, "timelineTs": *from.TimelineTs}, false)
		defer a.announceSnapshot(sid, src, "branch_point")
	default:
		a.mu.Unlock()
		return nil, acp.NewInvalidParams(map[string]any{"error": "from must name a snapshotId or a timelineTs"})
	}
	b := &branch{id: a.newID("branch"), name: spec.Name, snapshotID: src.id, parent: sid, created: a.opts.Now(), status: "ready"}
	b.mount = "/workspace/branches/" + b.id
	newSessions := []string{}
	sibling := spec.SessionReuse && a.faults[FaultSessionReuseSibling]
	if !spec.SessionReuse || sibling {
		n := 0
		for _, raw := range spec.Agents {
			var ag struct {
				Count *int `json:"count"`
			}
			_ = json.Unmarshal(raw, &ag)
			c := 1
			if ag.Count != nil {
				c = *ag.Count
			}
			n += min(max(c, 1), 16)
		}
		if n == 0 && (prompt != "" || sibling) {
			n = 1
		}
		for range n {
			s := a.addSession(b.mount)
			s.branch = b.id
			newSessions = append(newSessions, s.id)
		}
	}
	if spec.SessionReuse {
		a.sessions[sid].branch = b.id
	}
	if len(newSessions) > 0 || spec.SessionReuse {
		b.status = "running"
	}
	b.sessions = newSessions
	a.branches[b.id] = b
	a.brOrder = append(a.brOrder, b)
	a.mu.Unlock()
	if !a.faults[FaultBranchCreatedSilent] {
		a.harbor(sid, "branch_created", map[string]any{"branch": b.meta(), "newSessions": newSessions})
	}
	if spec.SessionReuse && !a.faults[FaultSessionReuseSilent] {
		a.announceSnapshot(sid, src, "branch_point")
		a.harbor(sid, "branch_updated", map[string]any{"branch": b.meta()})
	}
	out := map[string]any{"branch": b.meta(), "newSessions": newSessions}
	if a.faults[FaultBranchNoNewSessions] {
		delete(out, "newSessions")
	}
	return out, nil
}

func (a *agent) branchList(p map[string]json.RawMessage) (any, error) {
	sid := str(p, "sessionId")
	a.mu.Lock()
	defer a.mu.Unlock()
	list := []map[string]any{}
	for _, b := range a.brOrder {
		if b.parent == sid && !a.faults[FaultBranchListEmpty] {
			list = append(list, b.meta())
		}
	}
	return map[string]any{"branches": list}, nil
}

func (a *agent) branchDelete(p map[string]json.RawMessage) (any, error) {
	sid, id := str(p, "sessionId"), str(p, "branchId")
	a.mu.Lock()
	b := a.branches[id]
	if b == nil || b.parent != sid {
		a.mu.Unlock()
		return a.refuse(404, "branch-not-found", fmt.Sprintf("no branch %q in this session", id))
	}
	if (b.status == "running" || len(b.sessions) > 0) && !a.faults[FaultBranchDeleteRunning] {
		a.mu.Unlock()
		return a.refuse(409, "branch-busy", fmt.Sprintf("branch %s is %s with %d dependent sessions", id, b.status, len(b.sessions)))
	}
	if !a.faults[FaultBranchDeleteNoop] {
		delete(a.branches, id)
		a.brOrder = slices.DeleteFunc(a.brOrder, func(x *branch) bool { return x == b })
	}
	a.mu.Unlock()
	if !a.faults[FaultBranchCreatedSilent] {
		a.harbor(sid, "branch_deleted", map[string]any{"branchId": id})
	}
	return map[string]any{"branchId": id, "deleted": true}, nil
}

func (a *agent) sessionSeek(p map[string]json.RawMessage) (any, error) {
	sid, id := str(p, "sessionId"), str(p, "snapshotId")
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.snapshots[id]
	if s == nil || s.session != sid {
		return a.refuse(404, "snapshot-not-found", fmt.Sprintf("no snapshot %q in this session", id))
	}
	exec, ts := "", 0.0
	if s.anchor != nil {
		exec, _ = s.anchor["executionId"].(string)
		ts, _ = s.anchor["timelineTs"].(float64)
	}
	out := map[string]any{"mountPath": "/tmp/ah-snap-" + s.id, "executionId": exec, "timelineTs": ts}
	if a.faults[FaultSeekNoMount] {
		delete(out, "mountPath")
	}
	return out, nil
}

// --- pipelines -------------------------------------------------------------------------

func (a *agent) pipelineList(p map[string]json.RawMessage) (any, error) {
	sid, id := str(p, "sessionId"), str(p, "executionId")
	a.mu.Lock()
	defer a.mu.Unlock()
	ex := a.execs[id]
	if ex == nil || ex.session != sid {
		return a.refuse(404, "execution-not-found", fmt.Sprintf("no execution %q in this session", id))
	}
	list := []map[string]any{}
	for _, pl := range ex.pipelines {
		var steps []map[string]any
		var out, errb int
		for _, st := range pl.steps {
			steps = append(steps, map[string]any{"stepId": st.id, "command": st.command, "stdoutBytes": st.stdout, "stderrBytes": st.stderr})
			errb += st.stderr
		}
		if n := len(pl.steps); n > 0 {
			out = pl.steps[n-1].stdout
		}
		list = append(list, map[string]any{"pipelineId": pl.id, "startedAt": pl.started.UTC().Format(time.RFC3339Nano),
			"endedAt": pl.end.UTC().Format(time.RFC3339Nano), "bytes": map[string]any{"stdout": out, "stderr": errb}, "steps": steps})
	}
	if a.faults[FaultPipelineListEmpty] {
		list = []map[string]any{}
	}
	return map[string]any{"pipelines": list}, nil
}

func (a *agent) pipelineStream(p map[string]json.RawMessage) (any, error) {
	sid, id, pid, stepID := str(p, "sessionId"), str(p, "executionId"), str(p, "pipelineId"), str(p, "stepId")
	a.mu.Lock()
	defer a.mu.Unlock()
	ex := a.execs[id]
	if ex == nil || ex.session != sid {
		return a.refuse(404, "execution-not-found", fmt.Sprintf("no execution %q in this session", id))
	}
	for _, pl := range ex.pipelines {
		if pl.id != pid {
			continue
		}
		for _, st := range pl.steps {
			if st.id == stepID {
				if a.faults[FaultPipelineStreamNoID] {
					return map[string]any{}, nil
				}
				return map[string]any{"streamId": "stream-" + strings.ReplaceAll(st.id, ":", "-")}, nil
			}
		}
	}
	return a.refuse(404, "step-not-found", fmt.Sprintf("no step %q of pipeline %q", stepID, pid))
}
