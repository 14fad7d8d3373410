package openapi

import "slices"

// Rule maps the violations found under one schema of the document to the
// requirement of the registry (internal/requirements) they break.
type Rule struct {
	// Schema is a component name of the document ("Task", "TaskStatus"), the
	// receipt schema's file name, or "op:<operationId>" for the violations
	// that concern an operation rather than a schema (a status the
	// operation does not declare, a body that is not JSON). A Nested<Name>
	// component of patch P5 shares the rules of <Name>.
	Schema string
	// Field, when set, restricts the rule to violations about that member
	// of the object the schema describes, directly: the member is missing,
	// or its own value has the wrong type, value or format (a violation
	// deeper inside the member's value is not "about" it).
	Field string
	// Keyword, when set, restricts the rule to one failing keyword (enum,
	// required, type, format, const, …).
	Keyword string
	Req     string
}

// Resolution, for a violation found under the schemas S1 ⊃ S2 ⊃ … ⊃ Sn
// (components entered through $ref, outermost first):
//
//  1. the innermost Si with a rule whose Field the violation is directly
//     about (and whose Keyword matches, if set);
//  2. otherwise the innermost Si with a rule without Field (a rule naming
//     the violation's keyword before one that names none);
//  3. otherwise, for a 4xx or 5xx response, CORE-ERR-002 (every error
//     answer is the error envelope);
//  4. otherwise the operation's rule ("op:<operationId>");
//  5. otherwise no requirement (Req ""): request violations, which are
//     the suite's own mistakes, map to none. (The local server's routes,
//     Operation.LocalServer, map to EXT-HOST-001 and EXT-LOCAL-001: they
//     may be absent, but one that is served is judged.)
//
// So a wrong Task status (TaskStatus) is CORE-READ-004, a malformed
// started_at inside it (Timestamp) CORE-READ-002, a Task without id the
// envelope's CORE-READ-001, and a Part inside a Message inside an Outcome
// CORE-READ-006.
var reqTable = slices.Concat([]Rule{
	// Shared schemas, whatever resource holds them.
	{Schema: "Timestamp", Req: "CORE-READ-002"},
	{Schema: "TaskStatus", Req: "CORE-READ-004"},
	// Enum values outside v1 may be later non-breaking additions: a SHOULD.
	{Schema: "PartVisibility", Keyword: "enum", Req: "CORE-READ-009"},

	// Core resources. Their envelope members: envelope() below.
	{Schema: "Task", Req: "CORE-READ-004"},
	{Schema: "Session", Req: "CORE-READ-005"},
	{Schema: "Session", Field: "state", Keyword: "enum", Req: "CORE-READ-009"},
	{Schema: "Message", Req: "CORE-READ-006"},
	{Schema: "Message", Field: "role", Keyword: "enum", Req: "CORE-READ-009"},
	{Schema: "Part", Req: "CORE-READ-006"},
	{Schema: "Part", Field: "type", Keyword: "enum", Req: "CORE-READ-009"},
	{Schema: "TextPart", Req: "CORE-READ-006"},
	{Schema: "JsonPart", Req: "CORE-READ-006"},
	{Schema: "ToolCallPart", Req: "CORE-READ-006"},
	{Schema: "ToolResultPart", Req: "CORE-READ-006"},
	{Schema: "ArtifactRefPart", Req: "CORE-READ-006"},
	{Schema: "FileRefPart", Req: "CORE-READ-006"},
	{Schema: "ImageRefPart", Req: "CORE-READ-006"},
	{Schema: "Artifact", Req: "CORE-READ-007"},
	{Schema: "Artifact", Field: "kind", Keyword: "enum", Req: "CORE-READ-009"},
	{Schema: "Outcome", Req: "CORE-READ-008"},
	// A card's signature object is the Extended level's (card signing is
	// no Core requirement): a missing algorithm or key id is EXT-CARD-002,
	// anything else wrong in it EXT-CARD-001 (docs/card-signing.md).
	{Schema: "CardSignature", Field: "algorithm", Req: "EXT-CARD-002"},
	{Schema: "CardSignature", Field: "key_id", Req: "EXT-CARD-002"},
	{Schema: "CardSignature", Req: "EXT-CARD-001"},
	{Schema: "Outcome", Field: "status", Keyword: "enum", Req: "CORE-OUT-001"},
	{Schema: "Event", Req: "CORE-EVT-001"},

	// Lists of Core resources: the list envelope.
	{Schema: "TaskList", Req: "CORE-PAGE-001"},
	{Schema: "SessionList", Req: "CORE-PAGE-001"},
	{Schema: "MessageList", Req: "CORE-PAGE-001"},
	{Schema: "ArtifactList", Req: "CORE-PAGE-001"},
	{Schema: "EventList", Req: "CORE-PAGE-001"},
	{Schema: "OutcomeList", Req: "CORE-PAGE-001"},

	// Errors, discovery, agent card.
	{Schema: "ErrorResponse", Req: "CORE-ERR-002"},
	{Schema: "Error", Req: "CORE-ERR-002"},
	{Schema: "Error", Field: "code", Keyword: "enum", Req: "CORE-ERR-003"},
	{Schema: "Error", Field: "type", Keyword: "enum", Req: "CORE-ERR-003"},
	{Schema: "Discovery", Req: "CORE-DISC-001"},
	{Schema: "HarnAgentCard", Req: "CORE-CARD-001"},
	{Schema: "HarnAgentCard", Field: "a2a_card", Req: "CORE-CARD-001"}, // missing, or not an object
	{Schema: "A2aAgentCard", Req: "CORE-CARD-002"},
	{Schema: "A2aAgentInterface", Req: "CORE-CARD-002"},
	{Schema: "A2aAgentProvider", Req: "CORE-CARD-002"},
	{Schema: "A2aAgentCapabilities", Req: "CORE-CARD-002"},
	{Schema: "A2aAgentSkill", Req: "CORE-CARD-002"},
	{Schema: "A2aSecurityScheme", Req: "CORE-CARD-002"},
	{Schema: "A2aAgentCardSignature", Req: "CORE-CARD-002"},

	// Receipts (P1 puts the receipt schema in place of the Receipt component).
	{Schema: receiptSchemaFile, Req: "RCPT-SHAPE-001"},
	{Schema: receiptSchemaFile, Field: "schema", Req: "RCPT-SHAPE-002"},
	{Schema: "ReceiptList", Req: "RCPT-RES-002"},
	{Schema: "ReceiptVerification", Req: "RCPT-VERIFY-001"},
	{Schema: "ReceiptKeyDirectory", Req: "RCPT-SIGN-002"},

	// Extended resources.
	{Schema: "Persona", Req: "EXT-PERSONA-001"},
	{Schema: "PersonaList", Req: "EXT-PERSONA-001"},
	{Schema: "Workspace", Req: "EXT-WORKSPACE-001"},
	{Schema: "WorkspaceList", Req: "EXT-WORKSPACE-001"},
	{Schema: "Branch", Req: "EXT-BRANCH-001"},
	{Schema: "BranchList", Req: "EXT-BRANCH-001"},
	{Schema: "Vault", Req: "EXT-VAULT-001"},
	{Schema: "VaultList", Req: "EXT-VAULT-001"},
	{Schema: "Connector", Req: "EXT-CONNECTOR-001"},
	{Schema: "ConnectorList", Req: "EXT-CONNECTOR-001"},
	{Schema: "Skill", Req: "EXT-SKILL-001"},
	{Schema: "SkillList", Req: "EXT-SKILL-001"},
	{Schema: "Memory", Req: "EXT-MEMORY-001"},
	{Schema: "MemoryList", Req: "EXT-MEMORY-001"},
	{Schema: "Quota", Req: "EXT-QUOTA-001"},
	{Schema: "QuotaList", Req: "EXT-QUOTA-001"},
	{Schema: "TruncateSessionResponse", Req: "EXT-SESSION-003"},
	// Host-mediated approval (EXT-HOST-001) and the other local-server
	// routes of the later revision (EXT-LOCAL-001): optional, judged when
	// served.
	{Schema: "PermissionRequest", Req: "EXT-HOST-001"},
	{Schema: "PermissionRequestList", Req: "EXT-HOST-001"},
	{Schema: "Health", Req: "EXT-LOCAL-001"},
	{Schema: "RuntimeVersion", Req: "EXT-LOCAL-001"},
	{Schema: "RuntimeMetadata", Req: "EXT-LOCAL-001"},
	{Schema: "Capability", Req: "EXT-LOCAL-001"},
	{Schema: "CapabilitySummary", Req: "EXT-LOCAL-001"},
	{Schema: "Tool", Req: "EXT-LOCAL-001"},
	{Schema: "ToolList", Req: "EXT-LOCAL-001"},
	{Schema: "WorkspaceFile", Req: "EXT-LOCAL-001"},
	{Schema: "WorkspaceFileListing", Req: "EXT-LOCAL-001"},
	{Schema: "WorkspaceFileEntry", Req: "EXT-LOCAL-001"},

	// Operations: a success status the operation does not declare (ruling
	// 4: its own requirement), or a success body that is not JSON.
	{Schema: "op:getProtocolDiscovery", Req: "CORE-DISC-001"},
	{Schema: "op:getAgentCard", Req: "CORE-CARD-001"},
	{Schema: "op:createSession", Req: "CORE-READ-010"},
	{Schema: "op:getSession", Req: "CORE-READ-005"},
	{Schema: "op:appendSessionMessage", Req: "CORE-READ-011"},
	{Schema: "op:getMessage", Req: "CORE-READ-006"},
	{Schema: "op:submitSessionTask", Req: "CORE-TASK-001"},
	{Schema: "op:submitTask", Req: "CORE-TASK-002"},
	{Schema: "op:getTask", Req: "CORE-READ-004"},
	{Schema: "op:cancelTask", Req: "CORE-CANCEL-001"},
	{Schema: "op:getArtifact", Req: "CORE-READ-007"},
	{Schema: "op:getOutcome", Req: "CORE-READ-008"},
	{Schema: "op:getEvent", Req: "CORE-EVT-001"},
	{Schema: "op:listTasks", Req: "CORE-PAGE-001"},
	{Schema: "op:listSessions", Req: "CORE-PAGE-001"},
	{Schema: "op:listSessionTasks", Req: "CORE-PAGE-001"},
	{Schema: "op:listSessionMessages", Req: "CORE-PAGE-001"},
	{Schema: "op:listArtifacts", Req: "CORE-PAGE-001"},
	{Schema: "op:listEvents", Req: "CORE-PAGE-001"},
	{Schema: "op:listTaskEvents", Req: "CORE-PAGE-001"},
	{Schema: "op:listSessionEvents", Req: "CORE-PAGE-001"},
	{Schema: "op:listOutcomes", Req: "CORE-PAGE-001"},
	{Schema: "op:streamTaskEvents", Req: "CORE-SSE-001"},
	{Schema: "op:streamSessionEvents", Req: "CORE-SSE-001"},
	{Schema: "op:getReceipt", Req: "RCPT-RES-001"},
	{Schema: "op:listTaskReceipts", Req: "RCPT-RES-002"},
	{Schema: "op:verifyReceipt", Req: "RCPT-VERIFY-001"},
	{Schema: "op:getReceiptKeyDirectory", Req: "RCPT-SIGN-002"},
	{Schema: "op:replayTask", Req: "RPLY-API-001"},
	{Schema: "op:createPersona", Req: "EXT-PERSONA-001"},
	{Schema: "op:listPersonas", Req: "EXT-PERSONA-001"},
	{Schema: "op:getPersona", Req: "EXT-PERSONA-001"},
	{Schema: "op:listWorkspaces", Req: "EXT-WORKSPACE-001"},
	{Schema: "op:getWorkspace", Req: "EXT-WORKSPACE-001"},
	{Schema: "op:listSessionBranches", Req: "EXT-BRANCH-001"},
	{Schema: "op:getBranch", Req: "EXT-BRANCH-001"},
	{Schema: "op:listSkills", Req: "EXT-SKILL-001"},
	{Schema: "op:getSkill", Req: "EXT-SKILL-001"},
	{Schema: "op:updatePersona", Req: "EXT-PERSONA-001"},
	{Schema: "op:createWorkspace", Req: "EXT-WORKSPACE-001"},
	{Schema: "op:updateWorkspace", Req: "EXT-WORKSPACE-001"},
	{Schema: "op:forkSession", Req: "EXT-SESSION-006"},
	{Schema: "op:truncateSession", Req: "EXT-SESSION-003"},
	{Schema: "op:createSessionBranch", Req: "EXT-BRANCH-001"},
	{Schema: "op:registerArtifact", Req: "EXT-ARTIFACT-001"},
	{Schema: "op:createMemory", Req: "EXT-MEMORY-001"},
	{Schema: "op:deleteMemory", Req: "EXT-MEMORY-001"},
	{Schema: "op:createVault", Req: "EXT-VAULT-001"},
	{Schema: "op:listMemories", Req: "EXT-MEMORY-001"},
	{Schema: "op:getMemory", Req: "EXT-MEMORY-001"},
	{Schema: "op:listVaults", Req: "EXT-VAULT-001"},
	{Schema: "op:getVault", Req: "EXT-VAULT-001"},
	{Schema: "op:listQuotas", Req: "EXT-QUOTA-001"},
	{Schema: "op:getQuota", Req: "EXT-QUOTA-001"},
	{Schema: "op:listConnectors", Req: "EXT-CONNECTOR-001"},
	{Schema: "op:getConnector", Req: "EXT-CONNECTOR-001"},
	{Schema: "op:listPermissionRequests", Req: "EXT-HOST-001"},
	{Schema: "op:listTaskPermissionRequests", Req: "EXT-HOST-001"},
	{Schema: "op:respondPermissionRequest", Req: "EXT-HOST-001"},
	{Schema: "op:getHealth", Req: "EXT-LOCAL-001"},
	{Schema: "op:getVersion", Req: "EXT-LOCAL-001"},
	{Schema: "op:getOpenApiDocument", Req: "EXT-LOCAL-001"},
	{Schema: "op:getRuntime", Req: "EXT-LOCAL-001"},
	{Schema: "op:listCapabilities", Req: "EXT-LOCAL-001"},
	{Schema: "op:listTools", Req: "EXT-LOCAL-001"},
	{Schema: "op:getTool", Req: "EXT-LOCAL-001"},
	{Schema: "op:readWorkspaceFile", Req: "EXT-LOCAL-001"},
	{Schema: "op:writeWorkspaceFile", Req: "EXT-LOCAL-001"},
},
	// The common envelope of the resources CORE-READ-001 names: a missing
	// or mistyped id or metadata, or a missing timestamp, is CORE-READ-001;
	// a wrong object discriminator CORE-READ-003 (a malformed timestamp is
	// Timestamp's CORE-READ-002).
	envelope("Session"), envelope("Task"), envelope("Message"),
	envelope("Event"), envelope("Artifact"), envelope("Outcome"),
)

func envelope(schema string) []Rule {
	return []Rule{
		{Schema: schema, Field: "id", Req: "CORE-READ-001"},
		{Schema: schema, Field: "metadata", Req: "CORE-READ-001"},
		{Schema: schema, Field: "created_at", Keyword: "required", Req: "CORE-READ-001"},
		{Schema: schema, Field: "updated_at", Keyword: "required", Req: "CORE-READ-001"},
		{Schema: schema, Field: "object", Req: "CORE-READ-003"},
	}
}

// RequirementRules returns the mapping table (a copy), in its order.
func RequirementRules() []Rule { return slices.Clone(reqTable) }

type ruleKey struct{ schema, field, keyword string }

var ruleIndex = func() map[ruleKey]string {
	m := make(map[ruleKey]string, len(reqTable))
	for _, r := range reqTable {
		m[ruleKey{r.Schema, r.Field, r.Keyword}] = r.Req
	}
	return m
}()

// frame is a schema a violation was found under, and where in the instance
// it applied.
type frame struct {
	name string // component name (Nested prefix removed), or schema file
	loc  string // JSON pointer of the instance value it applied to
}

// resolveReq applies the resolution order above. directLoc/directField say
// which member the violation is directly about ("" field: none).
func resolveReq(frames []frame, directLoc, directField, keyword, opID string, status int) string {
	if directField != "" {
		for i := len(frames) - 1; i >= 0; i-- {
			f := frames[i]
			if f.loc != directLoc {
				continue
			}
			if r, ok := ruleIndex[ruleKey{f.name, directField, keyword}]; ok {
				return r
			}
			if r, ok := ruleIndex[ruleKey{f.name, directField, ""}]; ok {
				return r
			}
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if r, ok := ruleIndex[ruleKey{frames[i].name, "", keyword}]; ok && keyword != "" {
			return r
		}
		if r, ok := ruleIndex[ruleKey{frames[i].name, "", ""}]; ok {
			return r
		}
	}
	return opReq(opID, status)
}

// opReq is steps 3 to 5 of the resolution.
func opReq(opID string, status int) string {
	if status >= 400 {
		return "CORE-ERR-002"
	}
	if opID != "" {
		return ruleIndex[ruleKey{"op:" + opID, "", ""}]
	}
	return ""
}
