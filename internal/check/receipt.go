package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/receipt"
)

// Receipt checks (the Receipts level, docs/receipts.md). A receipt is kept
// as its raw bytes: the hash covers them, so nothing decodes and re-encodes
// a receipt before the verifier sees it.

// ReceiptList decodes GET /v1/tasks/{id}/receipts: a list envelope whose
// data items are receipt documents. It returns each item's raw JSON.
func ReceiptList(resp *client.Response) ([][]byte, error) {
	if err := Status(resp, 200); err != nil {
		return nil, err
	}
	var l struct {
		Object any               `json:"object"`
		Data   []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &l); err != nil {
		return nil, fmt.Errorf("%s: not a list envelope: %v%s", resp, err, bodyHint(resp))
	}
	if l.Object != "list" || l.Data == nil {
		return nil, fmt.Errorf("%s: object = %s and data %s, want {\"object\":\"list\",\"data\":[receipts…]}", resp, showValue(l.Object), presence(l.Data != nil))
	}
	if _, err := ListPage(resp); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(l.Data))
	for i, d := range l.Data {
		if t := bytes.TrimSpace(d); len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("%s: data[%d] is not a JSON object, want a receipt document", resp, i)
		}
		out = append(out, d)
	}
	return out, nil
}

func presence(ok bool) string {
	if ok {
		return "present"
	}
	return "absent"
}

// Findings returns res's findings of the given classes as one error, or nil.
// Specs call it once per requirement, each with the classes that
// requirement is about, so a receipt with one defect fails one requirement.
func Findings(where string, res receipt.Result, classes ...string) error {
	var msgs []string
	for _, f := range res.Findings {
		if slices.Contains(classes, f.Class) {
			msgs = append(msgs, f.String())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", where, strings.Join(msgs, "; "))
}

// SecretFindings splits the verifier's secret findings: credential-named
// members holding a value (RCPT-REDACT-001), and credential shapes inside
// strings or private keys (RCPT-REDACT-003).
func SecretFindings(where string, res receipt.Result) (named, shaped error) {
	var n, s []string
	for _, f := range res.Findings {
		if f.Class != receipt.ClassSecretMaterial {
			continue
		}
		if strings.Contains(f.Message, ": member ") {
			n = append(n, f.Message)
		} else {
			s = append(s, f.Message)
		}
	}
	if len(n) > 0 {
		named = fmt.Errorf("%s: credential-named members hold values: %s", where, strings.Join(n, "; "))
	}
	if len(s) > 0 {
		shaped = fmt.Errorf("%s: credentials found: %s", where, strings.Join(s, "; "))
	}
	return named, shaped
}

// ReceiptDoc is a decoded receipt, for the checks that read its members.
type ReceiptDoc map[string]any

// DecodeReceipt decodes a receipt for reading; numbers stay json.Number.
func DecodeReceipt(raw []byte) (ReceiptDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("receipt is not a JSON object: %v", err)
	}
	return m, nil
}

// Get reads a member by path ("chain", "receipt_hash").
func (d ReceiptDoc) Get(path ...string) any {
	var v any = map[string]any(d)
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// Str reads a string member by path.
func (d ReceiptDoc) Str(path ...string) string { s, _ := d.Get(path...).(string); return s }

// Label names the receipt in messages.
func (d ReceiptDoc) Label() string {
	if id := d.Str("receipt_id"); id != "" {
		return "receipt " + strconv.Quote(id)
	}
	return "receipt"
}

// FormatMarker checks the schema member (RCPT-SHAPE-002).
func FormatMarker(d ReceiptDoc) error {
	if got := d.Get("schema"); got != receipt.Format {
		return fmt.Errorf("%s: schema = %s, want %q", d.Label(), showValue(got), receipt.Format)
	}
	return nil
}

// Subject checks that a receipt listed for a task vouches for that task or
// something of it (RCPT-SHAPE-003): subject {object: task, id: the task},
// {object: outcome, id: its outcome}, or another subject kind whose
// identifiers name the task.
func Subject(d ReceiptDoc, task map[string]any) error {
	obj, id := d.Str("subject", "object"), d.Str("subject", "id")
	taskID, _ := task["id"].(string)
	outcomeID, _ := task["outcome_id"].(string)
	switch obj {
	case "task":
		if id == taskID {
			return nil
		}
	case "outcome":
		if id != "" && id == outcomeID {
			return nil
		}
	case "event", "artifact", "approval", "tool_call", "replay_segment":
		if id != "" && d.Str("identifiers", "task_id") == taskID {
			return nil
		}
	}
	return fmt.Errorf("%s: subject = {object: %q, id: %q}, want the task %q it is listed under (or its outcome %q, or a part of the task's run)", d.Label(), obj, id, taskID, outcomeID)
}

// RunIDs are the identifiers of the run a receipt covers, as the suite
// knows them: it created the session (in that workspace) and submitted the
// task, so none of them is taken on the target's word.
type RunIDs struct {
	Workspace, Session, Task string
}

// Identifiers checks that the receipt's identifiers name the run's
// workspace, session and task (RCPT-SHAPE-004). An empty want is a caller
// bug, never a vacuous match.
func Identifiers(d ReceiptDoc, want RunIDs) error {
	var errs []string
	for _, f := range []struct{ member, want, what string }{
		{"workspace_ref", want.Workspace, "the workspace of the task's session"},
		{"session_id", want.Session, "the task's session"},
		{"task_id", want.Task, "the task"},
	} {
		if f.want == "" {
			return fmt.Errorf("%s: cannot check identifiers.%s: the suite does not know %s", d.Label(), f.member, f.what)
		}
		if got := d.Get("identifiers", f.member); got != f.want {
			errs = append(errs, fmt.Sprintf("identifiers.%s = %s, want %q (%s)", f.member, showValue(got), f.want, f.what))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", d.Label(), strings.Join(errs, "; "))
	}
	return nil
}

// costTolerance absorbs the rounding of decimal amounts in binary floats.
const costTolerance = 1e-9

// Cost checks that the receipt's cost is one account of the run
// (RCPT-SHAPE-004): the per-provider amounts are parts of the total, so
// their sum is not more than it; and when the Outcome states a numeric
// cost total in the same currency (or none), the receipt's total equals
// it. outcome may be nil.
func Cost(d ReceiptDoc, outcome map[string]any) error {
	total, ok := jsonv.Number(d.Get("cost", "total"))
	if !ok {
		return fmt.Errorf("%s: cost.total is %s, want a number", d.Label(), describe(d.Get("cost", "total")))
	}
	var errs []string
	rows, _ := d.Get("cost", "provider_breakdown").([]any)
	sum := 0.0
	for _, x := range rows {
		m, _ := x.(map[string]any)
		if a, ok := jsonv.Number(m["amount"]); ok {
			sum += a
		}
	}
	if sum > total+costTolerance*(1+total) {
		errs = append(errs, fmt.Sprintf("cost.provider_breakdown amounts add up to %v, more than cost.total %v: a breakdown of the total cannot exceed it", sum, total))
	}
	if oc, _ := outcome["cost"].(map[string]any); oc != nil {
		ot, isNum := jsonv.Number(oc["total"])
		cur, hasCur := oc["currency"].(string)
		if isNum && (!hasCur || cur == d.Str("cost", "currency")) && math.Abs(ot-total) > costTolerance*(1+total) {
			errs = append(errs, fmt.Sprintf("cost.total is %v %s, but the task's Outcome states cost.total %v", total, d.Str("cost", "currency"), ot))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", d.Label(), strings.Join(errs, "; "))
	}
	return nil
}

// FinalArtifacts checks that every artifact the task's Outcome lists is
// among the receipt's final_artifacts (RCPT-REF-004): the receipt's
// "final artifact references" are the run's output. A receipt may name
// more (internal or receipt-only artifacts the Outcome does not show).
func FinalArtifacts(d ReceiptDoc, outcomeArtifacts []string) error {
	named := map[string]bool{}
	finals, _ := d.Get("final_artifacts").([]any)
	for _, x := range finals {
		m, _ := x.(map[string]any)
		if id, _ := m["artifact_id"].(string); id != "" {
			named[id] = true
		}
	}
	var missing []string
	for _, id := range outcomeArtifacts {
		if !named[id] {
			missing = append(missing, strconv.Quote(id))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: final_artifacts (%d entries) leaves out %s, which the task's Outcome lists among its artifacts", d.Label(), len(finals), strings.Join(missing, ", "))
	}
	return nil
}

// finalStates maps a terminal task status to the receipt's final_state.
var finalStates = map[string]string{Completed: "SUCCEEDED", Failed: "FAILED", Canceled: "CANCELED"}

// Lifecycle checks final_state against the task's status and that
// completed_at is not before started_at (RCPT-SHAPE-005).
func Lifecycle(d ReceiptDoc, taskStatus string) error {
	var errs []string
	if want, ok := finalStates[taskStatus]; ok && d.Get("lifecycle", "final_state") != want {
		errs = append(errs, fmt.Sprintf("lifecycle.final_state = %s, want %q for a %s task", showValue(d.Get("lifecycle", "final_state")), want, taskStatus))
	}
	start, err1 := time.Parse(time.RFC3339Nano, strings.ToUpper(d.Str("lifecycle", "started_at")))
	end, err2 := time.Parse(time.RFC3339Nano, strings.ToUpper(d.Str("lifecycle", "completed_at")))
	if err1 == nil && err2 == nil && end.Before(start) {
		errs = append(errs, fmt.Sprintf("lifecycle.completed_at %s is before started_at %s", d.Str("lifecycle", "completed_at"), d.Str("lifecycle", "started_at")))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", d.Label(), strings.Join(errs, "; "))
	}
	return nil
}

// Determinism checks RCPT-SHAPE-007: "unavailable" comes with a reason, and
// "byte_deterministic" with at least one replay material.
func Determinism(d ReceiptDoc) error {
	mats, _ := d.Get("replay_input", "materials").([]any)
	switch d.Str("replay_input", "determinism") {
	case "unavailable":
		if d.Str("replay_input", "unavailable_reason") == "" {
			return fmt.Errorf("%s: replay_input.determinism is \"unavailable\" without an unavailable_reason", d.Label())
		}
	case "byte_deterministic":
		if len(mats) == 0 {
			return fmt.Errorf("%s: replay_input.determinism is \"byte_deterministic\" with no materials to replay from", d.Label())
		}
	}
	return nil
}

// FailureVisible checks RCPT-SHAPE-008: a FAILED task's receipt says FAILED
// and carries a failure object.
func FailureVisible(d ReceiptDoc, taskStatus string) error {
	if taskStatus != Failed {
		return nil
	}
	if _, ok := d.Get("lifecycle", "failure").(map[string]any); !ok {
		return fmt.Errorf("%s: the task FAILED but lifecycle.failure is %s, want an object describing the failure", d.Label(), describe(d.Get("lifecycle", "failure")))
	}
	return nil
}

// SameReceipt checks that the document read at GET /v1/receipts/{id} is the
// receipt itself (RCPT-RES-001) and the one listed for the task: the same
// canonical bytes. Its receipt_id is ServedID's concern.
func SameReceipt(resp *client.Response, listed []byte) error {
	if err := Status(resp, 200); err != nil {
		return err
	}
	d, err := DecodeReceipt(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: %v%s", resp, err, bodyHint(resp))
	}
	if d.Get("schema") == nil || d.Get("chain") == nil {
		return fmt.Errorf("%s: the body has no schema or chain member: want the receipt document itself, not a wrapper around it%s", resp, bodyHint(resp))
	}
	a, errA := receipt.Canonical(resp.Body)
	b, errB := receipt.Canonical(listed)
	if errA == nil && errB == nil && !bytes.Equal(a, b) {
		return fmt.Errorf("%s: the receipt read by id differs from the one in the task's receipts list (hashes %s and %s)", resp, digestOf(a), digestOf(b))
	}
	return nil
}

// ServedID checks that the receipt read at GET /v1/receipts/{id} carries
// that id (RCPT-SHAPE-006): an id names one receipt. checked is false when
// the answer is no receipt at all (SameReceipt's finding), so there was
// nothing to compare.
func ServedID(resp *client.Response, id string) (checked bool, err error) {
	d, derr := DecodeReceipt(resp.Body)
	if derr != nil || resp.Status != 200 || d.Get("schema") == nil || d.Get("chain") == nil {
		return false, nil
	}
	if got := d.Str("receipt_id"); got != id {
		return true, fmt.Errorf("%s: the receipt served under id %q says receipt_id %q", resp, id, got)
	}
	return true, nil
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return receipt.HashPrefix + hex.EncodeToString(s[:])
}

// ChainLink checks one visible link (RCPT-CHAIN-001): next's
// previous_receipt_hash is null (a new chain, e.g. per task), the stored
// hash of prev, or one of known (hashes of other receipts the target
// issued). It returns the hash next links to when that is none of them.
func ChainLink(prev, next ReceiptDoc, known map[string]bool) (unresolved string, err error) {
	chain, _ := next.Get("chain").(map[string]any)
	link, present := chain["previous_receipt_hash"]
	if !present {
		return "", fmt.Errorf("%s: chain.previous_receipt_hash is absent, want null or the hash of an earlier receipt", next.Label())
	}
	s, ok := link.(string)
	switch {
	case link == nil:
		return "", nil
	case !ok:
		return "", fmt.Errorf("%s: chain.previous_receipt_hash is %s, want null or a sha256: hash", next.Label(), describe(link))
	case s == prev.Str("chain", "receipt_hash") || known[s]:
		return "", nil
	}
	return s, nil
}

// VerifyAnswer is a decoded POST /v1/receipts/{id}/verify answer.
type VerifyAnswer struct {
	Valid  bool
	Reason string
}

// Verification checks the verify API's answer shape (RCPT-VERIFY-001): 200
// with a boolean valid, an RFC 3339 checked_at, and a reason when valid
// is false.
func Verification(resp *client.Response) (VerifyAnswer, error) {
	var a VerifyAnswer
	if err := Status(resp, 200); err != nil {
		return a, err
	}
	m, err := resp.Object()
	if err != nil {
		return a, err
	}
	var errs []string
	v, ok := m["valid"].(bool)
	if !ok {
		errs = append(errs, fmt.Sprintf("valid is %s, want a boolean", describe(m["valid"])))
	}
	a.Valid = v
	if at, ok := m["checked_at"].(string); !ok {
		errs = append(errs, fmt.Sprintf("checked_at is %s, want an RFC 3339 timestamp", describe(m["checked_at"])))
	} else if err := Timestamp(at); err != nil {
		errs = append(errs, "checked_at: "+err.Error())
	}
	a.Reason, _ = m["reason"].(string)
	if ok && !v && strings.TrimSpace(a.Reason) == "" {
		errs = append(errs, fmt.Sprintf("valid is false but reason is %s, want a string saying why", describe(m["reason"])))
	}
	return a, findings(resp, "verification", errs)
}

// Agrees checks that the verify API's verdict matches the suite's own
// verification of the same receipt (RCPT-VERIFY-002).
func Agrees(resp *client.Response, a VerifyAnswer, ours receipt.Result) error {
	switch {
	case a.Valid && !ours.Valid():
		return fmt.Errorf("%s: the target says valid, but the receipt fails verification: %s", resp, joinFindings(ours.Findings))
	case !a.Valid && ours.Valid():
		return fmt.Errorf("%s: the target says invalid (%q), but the receipt passes every check the suite can make", resp, a.Reason)
	}
	return nil
}

func joinFindings(fs []receipt.Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// NoCanary checks that body does not hold the canary value in any spelling
// (SecretSpelled: as written, escaped, base64 as a careless issuer would
// inline replay bytes, hex, URL-encoded). The message never repeats the
// canary.
func NoCanary(where string, body []byte, canary string) error {
	if canary == "" {
		return nil
	}
	if sp := SecretSpelled(string(body), canary); sp != "" {
		return fmt.Errorf("%s carries the canary secret the task used (%s)", where, sp)
	}
	return nil
}

// NoReasoning checks that a receipt (or any document, body) does not carry
// thought, the hidden reasoning a task's agent thought (a canary), in any
// spelling (SecretSpelled: as written, escaped, base64, hex, URL-encoded)
// (RCPT-REDACT-004, RPLY-DELTA-006). The message never repeats it.
func NoReasoning(where string, body []byte, thought string) error {
	if thought == "" {
		return nil
	}
	if sp := SecretSpelled(string(body), thought); sp != "" {
		return fmt.Errorf("%s carries the hidden reasoning the agent thought (%s): receipts may describe decisions, never reveal private reasoning", where, sp)
	}
	return nil
}

// Redactions checks RCPT-REDACT-005 on one receipt: every redactions entry
// names a JSON pointer whose container still exists in the receipt (the
// structure is kept), says why, and carries a proof hash; and when the run used a
// secret (canary != ""), one entry's proof_hash is SHA-256 of it.
func Redactions(d ReceiptDoc, canary string) error {
	reds, _ := d.Get("redactions").([]any)
	var errs []string
	proved := false
	want := ""
	if canary != "" {
		sum := sha256.Sum256([]byte(canary))
		want = receipt.HashPrefix + hex.EncodeToString(sum[:])
	}
	for i, r := range reds {
		m, _ := r.(map[string]any)
		field, _ := m["field"].(string)
		// The redacted member may be gone or replaced by a marker, but what
		// held it stays, so a reader sees where content existed.
		if _, ok := resolvePointer(map[string]any(d), parentPointer(field)); !ok || !strings.HasPrefix(field, "/") {
			errs = append(errs, fmt.Sprintf("redactions[%d].field %q does not point into the receipt: the object or array that held the redacted content is gone", i, field))
		}
		if s, _ := m["reason"].(string); strings.TrimSpace(s) == "" {
			errs = append(errs, fmt.Sprintf("redactions[%d] has no reason", i))
		}
		ph, _ := m["proof_hash"].(string)
		if ph == "" {
			errs = append(errs, fmt.Sprintf("redactions[%d] (%q) has no proof_hash", i, field))
		}
		if want != "" && ph == want {
			proved = true
		}
	}
	if canary != "" && !proved {
		errs = append(errs, fmt.Sprintf("the task used a secret, but no redactions entry carries its proof hash (%d entries)", len(reds)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", d.Label(), strings.Join(errs, "; "))
	}
	return nil
}

// parentPointer drops a pointer's last token.
func parentPointer(ptr string) string {
	if i := strings.LastIndex(ptr, "/"); i > 0 {
		return ptr[:i]
	}
	return ""
}

// resolvePointer follows an RFC 6901 JSON pointer.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = jsonv.Untoken(tok)
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// ArtifactDigest checks RCPT-REF-004's second half: an artifact listed in
// final_artifacts with a sha256 has that content hash (the Artifact's
// sha256 is bare hex; a "sha256:" spelling is read the same).
func ArtifactDigest(d ReceiptDoc, entry map[string]any, artifact map[string]any) error {
	want, _ := entry["sha256"].(string)
	if want == "" {
		return nil
	}
	got, _ := artifact["sha256"].(string)
	if strings.TrimPrefix(got, receipt.HashPrefix) != strings.TrimPrefix(want, receipt.HashPrefix) {
		return fmt.Errorf("%s: final_artifacts names artifact %v with %s, but the artifact's sha256 is %s", d.Label(), entry["artifact_id"], want, showValue(artifact["sha256"]))
	}
	return nil
}

// ReceiptOf checks that a receipt reached through a reference is about the
// task (or, for session-wide references, the session) the reference came
// from (RCPT-REF-001..004).
func ReceiptOf(what string, d ReceiptDoc, taskID, sessionID string) error {
	if taskID != "" && (d.Str("identifiers", "task_id") == taskID || d.Str("subject", "id") == taskID) {
		return nil
	}
	if taskID == "" && sessionID != "" && d.Str("identifiers", "session_id") == sessionID {
		return nil
	}
	return fmt.Errorf("%s resolves to %s about task %q (session %q), want a receipt of task %q (session %q)", what, d.Label(),
		d.Str("identifiers", "task_id"), d.Str("identifiers", "session_id"), taskID, sessionID)
}

// KeyDirectoryCapability is the discovery capability (GET /v1,
// capabilities[…]) by which a target advertises where its receipt key
// directory is, a conform extension like conform.scenarios
// (docs/receipts.md §4); DefaultKeyDirectory is where the suite looks
// without it. The directory lives outside /v1/receipts/{receipt_id}, whose
// namespace belongs to receipt ids.
const (
	KeyDirectoryCapability = "conform.receipt_keys"
	DefaultKeyDirectory    = "/v1/receipt-keys"
)

// KeyDirectoryPath reads the key directory location a discovery document
// advertises in capabilities[KeyDirectoryCapability]: a path from the
// protocol root ("/v1/receipt-keys"), resolved against the base URL like
// every API path, or an absolute URL under the base URL. advertised is
// false when discovery names no location (the caller then uses
// DefaultKeyDirectory; so is a bare true). A location the suite will not
// follow — not a string, or outside the base URL, where it would not send
// the API key — is an error saying so.
func KeyDirectoryPath(discovery map[string]any, base string) (path string, query url.Values, advertised bool, err error) {
	caps, _ := discovery["capabilities"].(map[string]any)
	v, ok := caps[KeyDirectoryCapability]
	if _, flag := v.(bool); !ok || v == nil || flag {
		// Absent, null, or a bare flag: no location, so the default one.
		return DefaultKeyDirectory, nil, false, nil
	}
	s, isString := v.(string)
	if !isString || strings.TrimSpace(s) == "" {
		return "", nil, true, fmt.Errorf("discovery capabilities[%q] is %s, want the key directory's path (e.g. %q) or URL", KeyDirectoryCapability, describe(v), DefaultKeyDirectory)
	}
	u, perr := url.Parse(s)
	if perr != nil {
		return "", nil, true, fmt.Errorf("discovery capabilities[%q] %q is not a URL: %v", KeyDirectoryCapability, s, perr)
	}
	p := u.EscapedPath()
	if u.IsAbs() || u.Host != "" {
		b, berr := url.Parse(base)
		prefix := ""
		if berr == nil {
			prefix = strings.TrimSuffix(b.EscapedPath(), "/")
		}
		if berr != nil || !strings.EqualFold(u.Scheme, b.Scheme) || !strings.EqualFold(u.Host, b.Host) || !strings.HasPrefix(p, prefix+"/") {
			return "", nil, true, fmt.Errorf("discovery capabilities[%q] %q is outside the target's base URL: the suite does not send the API key to another location", KeyDirectoryCapability, s)
		}
		p = strings.TrimPrefix(p, prefix)
	}
	if !strings.HasPrefix(p, "/") {
		return "", nil, true, fmt.Errorf("discovery capabilities[%q] %q is a relative reference, want a path from the protocol root such as %q", KeyDirectoryCapability, s, DefaultKeyDirectory)
	}
	var q url.Values
	if u.RawQuery != "" {
		q = u.Query()
	}
	return p, q, true, nil
}
