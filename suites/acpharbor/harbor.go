package acpharbor

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/harbor"
	"github.com/harn-conform/conform/internal/suite"
)

// pipelinePrompt asks for a shell pipeline the recorder can see: three
// steps, harmless anywhere.
const pipelinePrompt = "This is a conformance check of pipeline introspection. Run this exact shell pipeline in the working directory with your shell tool and report its output: `printf 'alpha\\nERROR beta\\nERROR gamma\\n' | grep ERROR | wc -l`"

// errs joins the non-nil errors.
func errs(es ...error) error {
	es = slices.DeleteFunc(es, func(e error) bool { return e == nil })
	if len(es) == 0 {
		return nil
	}
	return errors.Join(es...)
}

// snapshotOf takes a manual snapshot for a spec about something else.
func (p *peer) snapshotOf(sid string, params map[string]any) (string, map[string]any) {
	GinkgoHelper()
	params["sessionId"] = sid
	r := p.mustHarbor("snapshot_create", "the snapshots block", params)
	ref := harbor.Refused(r)
	res, err := harbor.Object(r.Result)
	snap, _ := res["snapshot"].(map[string]any)
	id, _ := snap["id"].(string)
	if ref.Refused || err != nil || id == "" {
		suite.Unverified("_ah/snapshot_create gave no snapshot id ("+clipS(string(r.Raw))+")", "fix ACP-SNAP-001 first")
	}
	return id, snap
}

// needBranching gates the branch specs.
func (p *peer) needBranching() {
	GinkgoHelper()
	p.needHarbor(p.bundle.Snapshots, "snapshots")
	if !p.bundle.Snapshots.Flag("supportsBranching") {
		suite.NotApplicable("not claimed: the snapshots block does not advertise supportsBranching")
	}
}

// listed reports whether a listing result holds an entry whose key is id.
func listed(res map[string]any, arrayKey, key, id string) (bool, error) {
	list, err := harbor.ListIn(res, arrayKey)
	if err != nil {
		return false, err
	}
	return slices.Contains(harbor.IDs(list, key), id), nil
}

// judgeProblem records ACP-ERR-001 for a refusal's Problem+JSON document,
// if it carried one; it reports whether it did.
func judgeProblem(ref harbor.Refusal) bool {
	if ref.Problem == nil {
		return false
	}
	suite.Check("ACP-ERR-001", harbor.CheckProblem(ref.Problem))
	return true
}

var _ = Describe("ACP Harbor extensions", func() {
	It("advertises its Harbor bundle under agentCapabilities._meta", suite.Req("ACP-CAP-001", "ACP-CAP-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		if !p.bundle.Claimed() {
			suite.NotApplicable("not claimed: the agent advertises no agent.harbor bundle in its initialize result, so the Harbor extensions do not apply")
		}
		suite.Check("ACP-CAP-001", p.bundle.CheckPlacement())
		suite.Check("ACP-CAP-002", p.bundle.CheckBlocks())
	})

	It("serves the workspace methods it advertises", suite.Req("ACP-CAP-003", "ACP-NAME-001", "ACP-WS-001", "ACP-WS-003", "ACP-WS-004", "ACP-WS-005", "ACP-TENANT-001"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needHarbor(p.bundle.Workspace, "workspace")
		defer p.judgeNames()
		sid := p.mustSession()
		info := p.object("ACP-WS-001", "workspace/info", p.mustHarbor("workspace/info", "the workspace block", map[string]any{"sessionId": sid}))
		suite.Check("ACP-WS-001", harbor.Fields("workspace/info", info, map[string]string{"provider": "string", "workingCopy": "string", "execPath": "string", "usageBytes": "uint"}))
		if r := p.harbor("workspace/info", map[string]any{"sessionId": sid, "tenantId": "conform", "projectId": "conform"}); r != nil && r.Error != nil && r.Error.CodeOK && r.Error.Code == -32602 {
			suite.Check("ACP-TENANT-001", fmt.Errorf("workspace/info with the optional tenantId and projectId hints was refused as invalid params: %s", clipS(string(r.Raw))))
		}

		// The root, in the spellings a tree API may take.
		var root map[string]any
		var tried []string
		for _, at := range []string{".", "", "/"} {
			r := p.mustHarbor("workspace/list", "the workspace block", map[string]any{"sessionId": sid, "path": at, "recursive": false, "modifiedOnly": false})
			if ref := harbor.Refused(r); ref.Refused {
				tried = append(tried, fmt.Sprintf("%q: %s", at, refusalText(ref, r)))
				continue
			}
			m, err := harbor.Object(r.Result)
			suite.Must("ACP-WS-003", err)
			root = m
			break
		}
		if root == nil {
			suite.CheckBlocks("ACP-WS-003", fmt.Errorf("workspace/list of the root was refused in every spelling: %s", strings.Join(tried, "; ")), "ACP-WS-004", "ACP-WS-005")
			return
		}
		suite.Check("ACP-WS-003", errs(harbor.Fields("workspace/list", root, map[string]string{"path": "string", "type": "string", "children": "array"}),
			func() error {
				if root["type"] != "directory" {
					return fmt.Errorf("workspace/list of the root has type %s, want \"directory\"", harbor.Raw(root["type"]))
				}
				return nil
			}()))
		file := findFile(p, sid, root, 2)
		if file == "" {
			suite.NothingToCheck("ACP-WS-004", "the workspace listing shows no file to read", "keep a file in the session's workspace")
			suite.NothingToCheck("ACP-WS-005", "the workspace listing shows no file to diff", "keep a file in the session's workspace")
			return
		}
		fm := p.object("ACP-WS-004", "workspace/file "+file, p.mustHarbor("workspace/file", "the workspace block", map[string]any{"sessionId": sid, "path": file, "includeContent": true}))
		suite.Check("ACP-WS-004", harbor.CheckFile(fm, true))
		if !p.bundle.Workspace.Flag("supportsDiffs") {
			suite.NotApplicableTo("ACP-WS-005", "the workspace block does not advertise supportsDiffs")
			return
		}
		dr := p.optHarbor("workspace/diff", "supportsDiffs", map[string]any{"sessionId": sid, "files": []string{file}, "context": 3, "format": "unified"}, "ACP-WS-005")
		if dr == nil {
			return
		}
		dm := p.object("ACP-WS-005", "workspace/diff", dr)
		if !harbor.DiffCovers(dm, file) {
			suite.Check("ACP-WS-005", fmt.Errorf("workspace/diff of [%q] has no entry for it: %s", file, harbor.Raw(dm)))
		}
	})

	It("takes snapshots, announces and lists them", suite.Req("ACP-CAP-003", "ACP-NAME-001", "ACP-SNAP-001", "ACP-SNAP-002", "ACP-SNAP-003", "ACP-SNAP-005", "ACP-WS-002", "ACP-NOTIF-001", "ACP-NOTIF-003"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needHarbor(p.bundle.Snapshots, "snapshots")
		defer p.judgeNames()
		sid := p.mustSession()
		label := suite.Key("conform-snap")
		mark := p.conn.Mark()
		res := p.object("ACP-SNAP-001", "snapshot_create", p.mustHarbor("snapshot_create", "the snapshots block", map[string]any{"sessionId": sid, "label": label}))
		snap, ok := res["snapshot"].(map[string]any)
		if !ok {
			suite.Must("ACP-SNAP-001", fmt.Errorf("snapshot_create returned %s, want { snapshot: {…} }", harbor.Raw(res)))
		}
		suite.Check("ACP-SNAP-001", harbor.CheckSnapshot(snap, label))
		id, _ := snap["id"].(string)
		if id == "" {
			suite.Stop("ACP-SNAP-001")
		}
		if n, ok := p.waitNote(mark, "snapshot_created", func(n harbor.Note) bool {
			s, _ := n.Payload["snapshot"].(map[string]any)
			return s["id"] == id
		}); !ok {
			suite.Check("ACP-SNAP-005", fmt.Errorf("no harbor/snapshot_created announced snapshot %s within --stream-timeout (%s)", id, suite.Env().Config.Timeouts.Stream))
		} else if n.Payload["reason"] != "manual" || (n.Session != "" && n.Session != sid) {
			suite.Check("ACP-SNAP-005", fmt.Errorf("harbor/snapshot_created for the manual snapshot %s has reason %s and session %q, want reason \"manual\" and session %q", id, harbor.Raw(n.Payload["reason"]), n.Session, sid))
		}
		suite.Check("ACP-NOTIF-001", p.noteProblems(mark))
		if p.judgeNoteForms(mark) == 0 {
			suite.NothingToCheck(reqNoteForm, "no Harbor notification came after the manual snapshot", "announce snapshots with harbor/snapshot_created (ACP-SNAP-005)")
		}

		lres := p.object("ACP-SNAP-002", "snapshot_list", p.mustHarbor("snapshot_list", "the snapshots block", map[string]any{"sessionId": sid}))
		in, err := listed(lres, "snapshots", "id", id)
		if err == nil && !in {
			err = fmt.Errorf("snapshot_list does not list the snapshot %s just taken: %s", id, harbor.Raw(lres))
		}
		suite.Check("ACP-SNAP-002", err)

		prov, _ := snap["provider"].(string)
		other := "zfs"
		if prov == other {
			other = "btrfs"
		}
		var filterErrs []error
		if r := p.harbor("snapshot_list", map[string]any{"sessionId": sid, "provider": other}); r != nil && !harbor.Refused(r).Refused {
			m, _ := harbor.Object(r.Result)
			if in, err := listed(m, "snapshots", "id", id); err == nil && in {
				filterErrs = append(filterErrs, fmt.Errorf("snapshot_list with provider %q still lists snapshot %s of provider %q", other, id, prov))
			}
		}
		if r := p.harbor("snapshot_list", map[string]any{"sessionId": sid, "branchable": !(snap["branchable"] == true)}); r != nil && !harbor.Refused(r).Refused {
			m, _ := harbor.Object(r.Result)
			if in, err := listed(m, "snapshots", "id", id); err == nil && in {
				filterErrs = append(filterErrs, fmt.Errorf("snapshot_list with branchable %v still lists snapshot %s (branchable %v)", !(snap["branchable"] == true), id, snap["branchable"]))
			}
		}
		suite.Should("ACP-SNAP-003", errs(filterErrs...))

		if p.bundle.Workspace == nil {
			suite.NotApplicableTo("ACP-WS-002", "the agent advertises no workspace block")
			return
		}
		if r := p.harbor("workspace/info", map[string]any{"sessionId": sid}); r != nil && !harbor.Refused(r).Refused {
			info, _ := harbor.Object(r.Result)
			n, ok := harbor.Int(info["snapshotCount"])
			switch {
			case !ok || n < 1:
				suite.Should("ACP-WS-002", fmt.Errorf("after a manual snapshot, workspace/info has snapshotCount %s, want an integer ≥ 1", harbor.Raw(info["snapshotCount"])))
			case info["lastSnapshotId"] != id:
				suite.Should("ACP-WS-002", fmt.Errorf("after snapshot %s, workspace/info has lastSnapshotId %s", id, harbor.Raw(info["lastSnapshotId"])))
			}
		}
	})

	It("refuses to branch from a locked snapshot", suite.Req("ACP-SNAP-004", "ACP-ERR-001"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needBranching()
		sid := p.mustSession()
		r := p.mustHarbor("snapshot_create", "the snapshots block", map[string]any{"sessionId": sid, "label": suite.Key("conform-locked"), "locked": true})
		res := p.object("ACP-SNAP-004", "snapshot_create with locked true", r)
		snap, _ := res["snapshot"].(map[string]any)
		id, _ := snap["id"].(string)
		if id == "" {
			suite.Must("ACP-SNAP-004", fmt.Errorf("snapshot_create with locked true gave no snapshot id: %s", harbor.Raw(res)))
		}
		br := p.mustHarbor("branch_create", "supportsBranching", map[string]any{"sessionId": sid, "from": map[string]any{"snapshotId": id}, "branch": map[string]any{"name": suite.Key("conform-from-locked")}})
		ref := harbor.Refused(br)
		if !ref.Refused {
			suite.Check("ACP-SNAP-004", fmt.Errorf("branch_create from the locked snapshot %s was accepted: %s", id, clipS(string(br.Raw))))
		}
		if !judgeProblem(ref) {
			suite.NotApplicableTo("ACP-ERR-001", "the refusal carries no Problem+JSON document (a plain JSON-RPC error is a reading the text allows)")
		}
	})

	It("creates branches, lists them, refuses to delete a running one and deletes an idle one",
		suite.Req("ACP-CAP-003", "ACP-NAME-001", "ACP-BRANCH-001", "ACP-BRANCH-003", "ACP-BRANCH-004", "ACP-BRANCH-005", "ACP-BRANCH-007", "ACP-ERR-001"), func(ctx SpecContext) {
			p := start(ctx)
			p.initialize()
			p.needBranching()
			defer p.judgeNames()
			sid := p.mustSession()
			snapID, _ := p.snapshotOf(sid, map[string]any{"label": suite.Key("conform-base")})
			sawProblem := false

			mark := p.conn.Mark()
			name := suite.Key("conform-branch")
			res := p.object("ACP-BRANCH-001", "branch_create", p.mustHarbor("branch_create", "supportsBranching", map[string]any{
				"sessionId": sid, "from": map[string]any{"snapshotId": snapID},
				"branch": map[string]any{"name": name, "prompt": "Reply with the single word: ready.",
					"agents": []any{map[string]any{"type": "claude-code", "version": "latest", "count": 1}}},
				"prompt": "Reply with the single word: ready.",
			}))
			bm, _ := res["branch"].(map[string]any)
			if bm == nil {
				suite.Must("ACP-BRANCH-001", fmt.Errorf("branch_create returned %s, want { branch, newSessions }", harbor.Raw(res)))
			}
			newSessions, nsErr := harbor.SessionIDs("newSessions", res["newSessions"])
			p.sessions = append(p.sessions, newSessions...)
			suite.Check("ACP-BRANCH-001", errs(harbor.CheckBranch(bm, name, snapID, sid), nsErr))
			bid, _ := bm["branchId"].(string)
			if bid == "" {
				suite.Stop("ACP-BRANCH-001")
			}
			if _, ok := p.waitNote(mark, "branch_created", func(n harbor.Note) bool {
				b, _ := n.Payload["branch"].(map[string]any)
				return b["branchId"] == bid
			}); !ok {
				suite.Should("ACP-BRANCH-007", fmt.Errorf("no harbor/branch_created announced branch %s within --stream-timeout", bid))
			}
			lres := p.object("ACP-BRANCH-003", "branch_list", p.mustHarbor("branch_list", "supportsBranching", map[string]any{"sessionId": sid}))
			in, err := listed(lres, "branches", "branchId", bid)
			if err == nil && !in {
				err = fmt.Errorf("branch_list does not list the branch %s just created: %s", bid, harbor.Raw(lres))
			}
			suite.Check("ACP-BRANCH-003", err)
			wasListed := err == nil

			if status, _ := bm["status"].(string); status == "running" || len(newSessions) > 0 {
				dr := p.mustHarbor("branch_delete", "supportsBranching", map[string]any{"sessionId": sid, "branchId": bid})
				ref := harbor.Refused(dr)
				sawProblem = judgeProblem(ref) || sawProblem
				if !ref.Refused {
					suite.Check("ACP-BRANCH-004", fmt.Errorf("branch_delete of branch %s (status %q, %d dependent sessions) was accepted: %s", bid, status, len(newSessions), clipS(string(dr.Raw))))
				} else if r := p.harbor("branch_list", map[string]any{"sessionId": sid}); r != nil && wasListed {
					m, _ := harbor.Object(r.Result)
					if in, err := listed(m, "branches", "branchId", bid); err == nil && !in {
						suite.Check("ACP-BRANCH-004", fmt.Errorf("branch_delete of the running branch %s was refused, but branch_list no longer lists it", bid))
					}
				}
			} else {
				suite.NothingToCheck("ACP-BRANCH-004", fmt.Sprintf("branch %s, created with a prompt and an agent, is %q with no dependent session: no running branch to try to delete", bid, status),
					"start the agents of a branch created with a prompt (status running, newSessions)")
			}

			// An idle branch: no prompt, no agents.
			idleName := suite.Key("conform-idle")
			ir := p.mustHarbor("branch_create", "supportsBranching", map[string]any{"sessionId": sid, "from": map[string]any{"snapshotId": snapID}, "branch": map[string]any{"name": idleName}})
			if ref := harbor.Refused(ir); ref.Refused {
				suite.NothingToCheck("ACP-BRANCH-005", "branch_create without prompt or agents was refused ("+refusalText(ref, ir)+"): no idle branch to delete", "accept a branch without agents")
			} else {
				im, _ := harbor.Object(ir.Result)
				ib, _ := im["branch"].(map[string]any)
				iid, _ := ib["branchId"].(string)
				ins, _ := harbor.SessionIDs("newSessions", im["newSessions"])
				p.sessions = append(p.sessions, ins...)
				status, _ := ib["status"].(string)
				switch {
				case iid == "":
					suite.NothingToCheck("ACP-BRANCH-005", "the idle branch_create gave no branchId: "+harbor.Raw(im), "fix ACP-BRANCH-001")
				case status == "running" || len(ins) > 0:
					suite.NothingToCheck("ACP-BRANCH-005", fmt.Sprintf("a branch without prompt or agents is %q with %d sessions: no idle branch to delete", status, len(ins)), "leave a branch without agents idle")
				default:
					dmark := p.conn.Mark()
					dr := p.mustHarbor("branch_delete", "supportsBranching", map[string]any{"sessionId": sid, "branchId": iid})
					if ref := harbor.Refused(dr); ref.Refused {
						sawProblem = judgeProblem(ref) || sawProblem
						suite.Check("ACP-BRANCH-005", fmt.Errorf("branch_delete of the idle branch %s (status %q, no sessions) was refused: %s", iid, status, refusalText(ref, dr)))
					} else {
						lr := p.object("ACP-BRANCH-005", "branch_list", p.mustHarbor("branch_list", "supportsBranching", map[string]any{"sessionId": sid}))
						if in, err := listed(lr, "branches", "branchId", iid); err != nil || in {
							suite.Check("ACP-BRANCH-005", errs(err, func() error {
								if in {
									return fmt.Errorf("branch_delete of branch %s answered %s, but branch_list still lists it", iid, clipS(string(dr.Result)))
								}
								return nil
							}()))
						}
						if _, ok := p.waitNote(dmark, "branch_deleted", func(n harbor.Note) bool { return n.Payload["branchId"] == iid }); !ok {
							suite.Should("ACP-BRANCH-007", fmt.Errorf("no harbor/branch_deleted announced the deletion of branch %s within --stream-timeout", iid))
						}
					}
				}
			}
			if !sawProblem {
				suite.NotApplicableTo("ACP-ERR-001", "no refusal in this spec carried a Problem+JSON document")
			}
		})

	It("branches from a timeline moment", suite.Req("ACP-BRANCH-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needBranching()
		sid := p.mustSession()
		r := p.mustHarbor("branch_create", "supportsBranching", map[string]any{"sessionId": sid, "from": map[string]any{"timelineTs": 0.0}, "branch": map[string]any{"name": suite.Key("conform-moment")}})
		if ref := harbor.Refused(r); ref.Refused {
			suite.Should("ACP-BRANCH-002", fmt.Errorf("branch_create from { timelineTs: 0 } was refused: %s", refusalText(ref, r)))
			return
		}
		res, err := harbor.Object(r.Result)
		if err == nil {
			if b, ok := res["branch"].(map[string]any); !ok || b["branchId"] == nil {
				err = fmt.Errorf("branch_create from a timeline moment returned %s, want a branch", harbor.Raw(res))
			}
			ns, _ := harbor.SessionIDs("newSessions", res["newSessions"])
			p.sessions = append(p.sessions, ns...)
		}
		suite.Should("ACP-BRANCH-002", err)
	})

	It("reuses the current session for a branch, announcing the swap and opening no sibling", suite.Req("ACP-BRANCH-006", "ACP-BRANCH-009"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needBranching()
		sid := p.mustSession()
		snapID, _ := p.snapshotOf(sid, map[string]any{"label": suite.Key("conform-reuse")})
		mark := p.conn.Mark()
		r := p.mustHarbor("branch_create", "supportsBranching", map[string]any{"sessionId": sid, "from": map[string]any{"snapshotId": snapID},
			"branch": map[string]any{"name": suite.Key("conform-reused"), "sessionReuse": true}})
		res := p.object("ACP-BRANCH-006", "branch_create with sessionReuse", r)
		b, _ := res["branch"].(map[string]any)
		bid, _ := b["branchId"].(string)
		var missing []string
		if _, ok := p.waitNote(mark, "snapshot_created", func(n harbor.Note) bool {
			s, _ := n.Payload["snapshot"].(map[string]any)
			return n.Payload["reason"] != "manual" || s["id"] != snapID
		}); !ok {
			missing = append(missing, "harbor/snapshot_created")
		}
		if _, ok := p.waitNote(mark, "branch_updated", func(n harbor.Note) bool {
			nb, _ := n.Payload["branch"].(map[string]any)
			return bid == "" || nb["branchId"] == bid
		}); !ok {
			missing = append(missing, "harbor/branch_updated")
		}
		if len(missing) > 0 {
			suite.Check("ACP-BRANCH-006", fmt.Errorf("branch_create with branch.sessionReuse true (branch %q): no %s within --stream-timeout", bid, strings.Join(missing, " and no ")))
		}
		// "re-use the existing session instead of creating a sibling":
		// the whole answer and everything the agent sent since, not only
		// what it lists, must show no session but this one.
		p.sync()
		suite.Check("ACP-BRANCH-009", harbor.CheckReuse(bid, sid, res, p.conn.Received(mark), p.sessions))
	})

	It("mounts a snapshot for exploration, where it implements session_seek", suite.Req("ACP-SEEK-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needHarbor(p.bundle.Snapshots, "snapshots")
		sid := p.mustSession()
		snapID, _ := p.snapshotOf(sid, map[string]any{"label": suite.Key("conform-seek")})
		r := p.harbor("session_seek", map[string]any{"sessionId": sid, "snapshotId": snapID, "mountReadonly": true})
		if r == nil {
			suite.NotApplicableTo("ACP-SEEK-002", "the agent does not implement the optional session_seek (Method not found as _ah/ and harbor/)")
			return
		}
		res := p.object("ACP-SEEK-002", "session_seek", r)
		suite.Check("ACP-SEEK-002", harbor.Fields("session_seek", res, map[string]string{"mountPath": "nonempty", "executionId": "string", "timelineTs": "number"}))
	})

	It("spawns one session per agent instance with _ah/session/new, where it implements it", suite.Req("ACP-MULTI-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needHarbor(p.bundle.Snapshots, "snapshots (the gate of _ah/session/new)")
		r := p.harbor("session/new", map[string]any{
			"tenantId": "conform", "projectId": "conform", "prompt": "Reply with the single word: ready.",
			"agents": []any{
				map[string]any{"model": map[string]any{"id": "conform-model-a", "provider": "conform"}, "count": 2, "delivery": map[string]any{"mode": "pr"}},
				map[string]any{"model": map[string]any{"id": "conform-model-b", "provider": "conform"}},
			},
			"labels": map[string]any{"conform": "multi"},
		})
		if r == nil {
			suite.NotApplicableTo("ACP-MULTI-002", "the agent does not implement the optional _ah/session/new (Method not found as _ah/ and harbor/)")
			return
		}
		if ref := harbor.Refused(r); ref.Refused {
			suite.NothingToCheck("ACP-MULTI-002", "_ah/session/new with two made-up models was refused ("+refusalText(ref, r)+")",
				"accept any model id, or run this check against a Harbor that knows the models conform-model-a and conform-model-b")
			return
		}
		res := p.object("ACP-MULTI-002", "_ah/session/new", r)
		ids, err := harbor.SessionIDs("sessions", res["sessions"])
		p.sessions = append(p.sessions, ids...)
		if err == nil {
			list, _ := harbor.ListIn(res, "sessions")
			var models []string
			for _, s := range list {
				m, _ := s["model"].(map[string]any)
				id, _ := m["id"].(string)
				models = append(models, id)
			}
			slices.Sort(models)
			if want := []string{"conform-model-a", "conform-model-a", "conform-model-b"}; !slices.Equal(models, want) {
				err = fmt.Errorf("_ah/session/new with agents [model a × count 2, model b] returned %d sessions with models %v, want %v (count sessions per entry, 1 without count)", len(ids), models, want)
			}
		}
		suite.Check("ACP-MULTI-002", err)
	})

	It("streams a turn's shell pipeline as harbor/* notifications and lists it", suite.Req("ACP-CAP-003", "ACP-NAME-001", "ACP-PIPE-001", "ACP-PIPE-002", "ACP-PIPE-004", "ACP-PIPE-005", "ACP-NOTIF-001", "ACP-NOTIF-002", "ACP-NOTIF-003"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.needHarbor(p.bundle.Pipeline, "pipelineIntrospection")
		defer p.judgeNames()
		streaming := p.bundle.Pipeline.Flag("supportsStepStreaming")
		sid := p.mustSession()
		mark := p.conn.Mark()
		p.prompt(sid, pipelinePrompt)
		p.sync()
		msgs := p.conn.Received(mark)
		var detected *harbor.Note
		var steps, checkpoints []harbor.Note
		for _, n := range harbor.Notes(msgs) {
			switch n.Kind {
			case "pipeline_detected":
				if detected == nil {
					nn := n
					detected = &nn
				}
			case "pipeline_step_updated":
				steps = append(steps, n)
			case "timeline_checkpoint":
				checkpoints = append(checkpoints, n)
			}
		}
		suite.Check("ACP-NOTIF-001", p.noteProblems(mark))
		if p.judgeNoteForms(mark) == 0 {
			suite.NotApplicableTo(reqNoteForm, "the turn sent no Harbor notification")
		}
		if detected == nil {
			ranTool := false
			for _, m := range updatesFor(sid, msgs) {
				ranTool = ranTool || strings.Contains(string(m.Params), `"sessionUpdate":"tool_call"`)
			}
			switch {
			case !streaming:
				suite.NotApplicableTo("ACP-PIPE-004", "pipelineIntrospection does not advertise supportsStepStreaming")
				suite.NotApplicableTo("ACP-PIPE-005", "pipelineIntrospection does not advertise supportsStepStreaming")
				suite.NotApplicableTo("ACP-PIPE-002", "pipelineIntrospection does not advertise supportsStepStreaming")
				suite.NothingToCheck("ACP-PIPE-001", "no notification named the turn's execution", "announce pipelines with harbor/pipeline_detected")
				suite.NothingToCheck("ACP-NOTIF-002", "the turn recorded no pipeline", "run the pipeline the prompt asks for")
				return
			case ranTool:
				suite.CheckBlocks("ACP-PIPE-004", fmt.Errorf("the turn ran a tool call but sent no harbor/pipeline_detected"), "ACP-PIPE-001", "ACP-PIPE-002", "ACP-PIPE-005", "ACP-NOTIF-002")
				return
			default:
				suite.Unverified("the turn ran no tool call: the agent did not run the pipeline the prompt asked for (conform grants no permission)",
					"let the agent run `printf … | grep ERROR | wc -l` without asking permission, as the reference agent does")
			}
		}
		suite.Check("ACP-PIPE-004", harbor.Fields("harbor/pipeline_detected", detected.Payload, map[string]string{"sessionId": "string", "executionId": "nonempty", "pipelineId": "nonempty", "steps": "array"}))
		exec, _ := detected.Payload["executionId"].(string)
		pipe, _ := detected.Payload["pipelineId"].(string)
		var stepIDs []string
		if arr, ok := detected.Payload["steps"].([]any); ok {
			for _, s := range arr {
				if id, ok := s.(string); ok {
					stepIDs = append(stepIDs, id)
				} else if m, ok := s.(map[string]any); ok {
					if id, ok := m["stepId"].(string); ok {
						stepIDs = append(stepIDs, id)
					}
				}
			}
		}
		if streaming {
			var stepErrs []error
			seen := 0
			for _, n := range steps {
				if n.Payload["pipelineId"] != pipe {
					continue
				}
				seen++
				st, _ := n.Payload["step"].(map[string]any)
				stepErrs = append(stepErrs, harbor.CheckStep(st))
				if id, _ := st["stepId"].(string); id != "" && !slices.Contains(stepIDs, id) {
					stepErrs = append(stepErrs, fmt.Errorf("harbor/pipeline_step_updated names step %q, which harbor/pipeline_detected did not announce (%v)", id, stepIDs))
				}
			}
			if seen == 0 {
				stepErrs = append(stepErrs, fmt.Errorf("no harbor/pipeline_step_updated for pipeline %s in the turn", pipe))
			}
			suite.Check("ACP-PIPE-005", errs(stepErrs...))
		} else {
			suite.NotApplicableTo("ACP-PIPE-005", "pipelineIntrospection does not advertise supportsStepStreaming")
		}
		if len(checkpoints) == 0 {
			suite.Should("ACP-NOTIF-002", fmt.Errorf("the turn recorded pipeline %s but sent no harbor/timeline_checkpoint", pipe))
		}

		lres := p.object("ACP-PIPE-001", "tool_pipeline_list", p.mustHarbor("tool_pipeline_list", "pipelineIntrospection", map[string]any{"sessionId": sid, "executionId": exec}))
		suite.Check("ACP-PIPE-001", checkPipelineList(lres, pipe, stepIDs))
		if !streaming {
			suite.NotApplicableTo("ACP-PIPE-002", "pipelineIntrospection does not advertise supportsStepStreaming")
			return
		}
		if len(stepIDs) == 0 {
			suite.NothingToCheck("ACP-PIPE-002", "harbor/pipeline_detected named no step to stream", "name the steps in harbor/pipeline_detected")
			return
		}
		sres := p.object("ACP-PIPE-002", "tool_pipeline_stream", p.mustHarbor("tool_pipeline_stream", "supportsStepStreaming", map[string]any{
			"sessionId": sid, "executionId": exec, "pipelineId": pipe, "stepId": stepIDs[len(stepIDs)-1], "stream": "stdout", "follow": false}))
		suite.Check("ACP-PIPE-002", harbor.Fields("tool_pipeline_stream", sres, map[string]string{"streamId": "nonempty"}))
	})
})

// checkPipelineList is ACP-PIPE-001: the listing holds the announced
// pipeline with every announced step, each typed.
func checkPipelineList(res map[string]any, pipe string, stepIDs []string) error {
	list, err := harbor.ListIn(res, "pipelines")
	if err != nil {
		return err
	}
	for _, pl := range list {
		if pl["pipelineId"] != pipe {
			continue
		}
		steps, err := harbor.ListIn(pl, "steps")
		if err != nil {
			return fmt.Errorf("pipeline %s: %v", pipe, err)
		}
		var probs []error
		for i, st := range steps {
			probs = append(probs, harbor.Fields(fmt.Sprintf("pipelines[%s].steps[%d]", pipe, i), st, map[string]string{"stepId": "nonempty", "command": "string", "stdoutBytes": "uint", "stderrBytes": "uint"}))
		}
		have := harbor.IDs(steps, "stepId")
		for _, id := range stepIDs {
			if !slices.Contains(have, id) {
				probs = append(probs, fmt.Errorf("pipeline %s lists steps %v, without the announced step %s", pipe, have, id))
			}
		}
		return errs(probs...)
	}
	return fmt.Errorf("tool_pipeline_list does not list the announced pipeline %s: %s", pipe, harbor.Raw(res))
}

// findFile finds a file in a listing, descending up to depth directories.
func findFile(p *peer, sid string, node map[string]any, depth int) string {
	GinkgoHelper()
	children, _ := harbor.ListIn(node, "children")
	dir, _ := node["path"].(string)
	full := func(c map[string]any) string {
		if s, ok := c["path"].(string); ok && s != "" {
			return s
		}
		name, _ := c["name"].(string)
		return path.Join(strings.Trim(dir, "/."), name)
	}
	for _, c := range children {
		if c["type"] == "file" {
			return full(c)
		}
	}
	if depth == 0 {
		return ""
	}
	for _, c := range children {
		if c["type"] != "directory" {
			continue
		}
		r := p.harbor("workspace/list", map[string]any{"sessionId": sid, "path": full(c), "recursive": false, "modifiedOnly": false})
		if r == nil || harbor.Refused(r).Refused {
			continue
		}
		m, err := harbor.Object(r.Result)
		if err != nil {
			continue
		}
		if f := findFile(p, sid, m, depth-1); f != "" {
			return f
		}
	}
	return ""
}
