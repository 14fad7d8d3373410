package refharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness/fault"
)

// Hostile input: every request body is judged against the OpenAPI
// document before a write acts on it (the checks the handlers make by hand
// stay, for what the document cannot say), so what the document declares
// invalid is refused with 400 invalid_request naming the member; a body
// nested deeper than maxBodyDepth, with a member twice in one object, or
// sent with a Content-Type that is not JSON is refused too.

// Faults of this area: the request validation the hostile-input pass
// (suites/*/hostile.go) probes, one set per level.
var (
	FaultTypeError500 = declare(fault.Fault{Name: "type-error-500",
		Doc:       "a member of the wrong type in a Core write's body answers 500 internal_error instead of 400",
		Fails:     []string{"CORE-NEG-001"},
		Tolerated: []string{"CORE-ERR-004"},
		Why:       "the malformed-body spec's two wrong-type bodies (input: 42, message.role: 7) get the same 500 (CORE-ERR-004)"})
	FaultFutureEnumAccepted = declare(fault.Fault{Name: "future-enum-accepted",
		Doc:   "an enum value outside the document's enum in a Core write is silently taken as the enum's first value, and the write succeeds",
		Fails: []string{"CORE-NEG-002"}})
	FaultRefusedMessageStored = declare(fault.Fault{Name: "refused-message-stored",
		Doc:   "a message append refused for its body (400) still stores a message in the session",
		Fails: []string{"CORE-NEG-003"}})
	FaultUnknownMemberRefused = declare(fault.Fault{Name: "unknown-member-refused",
		Doc:   "a Core write whose body has a top-level member its schema does not name is refused with 400 naming it",
		Fails: []string{"CORE-NEG-005"}})

	FaultExtTypeError500 = declare(fault.Fault{Name: "ext-type-error-500",
		Doc:   "a member of the wrong type in an Extended write's body answers 500 internal_error instead of 400",
		Fails: []string{"EXT-NEG-001"}})
	FaultExtFutureEnumAccepted = declare(fault.Fault{Name: "ext-future-enum-accepted",
		Doc:   "an enum value outside the document's enum in an Extended write is silently taken as the enum's first value, and the write succeeds",
		Fails: []string{"EXT-NEG-002"}})
	FaultRefusedPersonaStored = declare(fault.Fault{Name: "refused-persona-stored",
		Doc:   "a persona create refused for its body (400) still stores a persona",
		Fails: []string{"EXT-NEG-003"}})
	FaultExtUnknownMemberRefused = declare(fault.Fault{Name: "ext-unknown-member-refused",
		Doc:   "a memory create whose body has a top-level member its schema does not name is refused with 400 naming it",
		Fails: []string{"EXT-NEG-005"}})

	FaultVerifyTypeError500 = declare(fault.Fault{Name: "verify-type-error-500",
		Doc:   "a receipt verify body with a member of the wrong type answers 500 internal_error instead of 400",
		Fails: []string{"RCPT-NEG-001"}})
	FaultReplayTypeError500 = declare(fault.Fault{Name: "replay-type-error-500",
		Doc:   "a replay request body with a member of the wrong type answers 500 internal_error instead of 400",
		Fails: []string{"RPLY-NEG-001"}})
)

// maxBodyDepth bounds how deeply a request body may nest, maxBodyItems how
// many items one array of it may hold (a configured limit: 413
// payload_too_large), so that no body costs the validation more than its
// bytes do.
const (
	maxBodyDepth = 64
	maxBodyItems = 1000
)

// levelFaults are each level's faults of this area.
var levelFaults = map[requirements.Level]struct {
	typeError500, futureEnum, unknownMember Fault
}{
	requirements.Core:     {FaultTypeError500, FaultFutureEnumAccepted, FaultUnknownMemberRefused},
	requirements.Extended: {FaultExtTypeError500, FaultExtFutureEnumAccepted, FaultExtUnknownMemberRefused},
	requirements.Receipts: {typeError500: FaultVerifyTypeError500},
	requirements.Replay:   {typeError500: FaultReplayTypeError500},
}

// extUnknownMemberOps are the operations FaultExtUnknownMemberRefused
// breaks: the suite's other specs send extension members to other Extended
// creates (artifact bytes, vault secrets, a persona's tools), which a
// target that refused them could not offer.
var extUnknownMemberOps = map[string]bool{"createMemory": true}

// checkBody judges a write's body before the write acts. It returns the
// refusal, nil to go on; a fault may instead repair the body (c.body) and
// let the write go on, or ask for the write to be made and the refusal sent
// after it (stored).
func (s *Server) checkBody(c *call, raw []byte) (refusal *apiError, stored bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = nil
	}
	if raw != nil {
		if ct := c.r.Header.Get("Content-Type"); ct != "" {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || !jsonMedia(mt) {
				return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
					Message: fmt.Sprintf("request Content-Type %q is not JSON; send application/json", clipString(ct, 80))}, false
			}
		}
		if e := bodyShape(raw); e != nil {
			return e, false
		}
	}
	doc, err := openapi.Default()
	if err != nil {
		return internal(err), false
	}
	opID, vs := doc.ValidateRequestBody(c.r.Method, c.target, http.Header{"Content-Type": {"application/json"}}, raw)
	if opID == "" {
		return nil, false
	}
	op, _ := doc.Operation(opID)
	lf := levelFaults[negative.LevelOf(op)]
	if lf.unknownMember != "" && s.opts.Faults.Has(lf.unknownMember) && (lf.unknownMember != FaultExtUnknownMemberRefused || extUnknownMemberOps[opID]) {
		if sch, ok := doc.RequestSchema(opID); ok {
			if props, ok := doc.Deref(sch)["properties"].(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(c.body.m)) {
					if _, known := props[k]; !known {
						return badRequest(k, "unknown field %s", k), false
					}
				}
			}
		}
	}
	if len(vs) == 0 {
		return nil, false
	}
	v := vs[0]
	if lf.futureEnum != "" && s.opts.Faults.Has(lf.futureEnum) && allEnum(vs) {
		for _, v := range vs {
			setAt(c.body.m, v.Pointer, v.Want[0])
		}
		return nil, false
	}
	if lf.typeError500 != "" && s.opts.Faults.Has(lf.typeError500) && v.Keyword == "type" {
		return internal(errString("cannot convert " + paramOf(v.Pointer))), false
	}
	e := badRequest(paramOf(v.Pointer), "%s", violationText(v))
	stored = opID == "appendSessionMessage" && s.opts.Faults.Has(FaultRefusedMessageStored) ||
		opID == "createPersona" && s.opts.Faults.Has(FaultRefusedPersonaStored)
	return e, stored
}

// storedBody is the body a write refused under FaultRefusedMessageStored
// or FaultRefusedPersonaStored stores: what such a server kept of it.
func storedBody(c *call) map[string]any {
	if strings.HasSuffix(c.target, "/personas") {
		return map[string]any{"name": "refused", "version": "0", "entry_workflow": "refused", "description": "kept from a refused request",
			"autonomy_tier": "suggest", "receipt_policy": "optional"}
	}
	return map[string]any{"message": map[string]any{"role": "user", "parts": []any{}}}
}

func allEnum(vs []openapi.Violation) bool {
	for _, v := range vs {
		if v.Keyword != "enum" || len(v.Want) == 0 || v.Pointer == "" {
			return false
		}
	}
	return true
}

// setAt sets the member a JSON pointer names, if its parent exists.
func setAt(root map[string]any, ptr string, v any) {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var cur any = root
	for i, t := range toks {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		last := i == len(toks)-1
		switch x := cur.(type) {
		case map[string]any:
			if last {
				x[t] = v
				return
			}
			cur = x[t]
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(x) {
				return
			}
			if last {
				x[n] = v
				return
			}
			cur = x[n]
		default:
			return
		}
	}
}

// paramOf renders a JSON pointer as the Harness's param spelling:
// /message/parts/0/role is message.parts[0].role.
func paramOf(ptr string) string {
	var b strings.Builder
	for _, t := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if t == "" {
			continue
		}
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

func violationText(v openapi.Violation) string {
	p := paramOf(v.Pointer)
	switch {
	case v.Keyword == "required":
		return "missing required field " + p
	case p == "":
		return "request body: " + v.Message
	}
	return "field " + p + ": " + v.Message
}

func jsonMedia(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// bodyShape refuses a body nested deeper than maxBodyDepth or with a
// member named twice in one object (RFC 8259 leaves what a duplicate means
// to the parser; the Harness does not guess). The body is known to be
// one JSON value.
func bodyShape(raw []byte) *apiError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj, wantKey bool
		seen         map[string]bool
		path, key    string
		items        int
	}
	var stack []*frame
	var tooMany *apiError
	valueDone := func() {
		n := len(stack)
		if n == 0 {
			return
		}
		if top := stack[n-1]; top.obj {
			top.wantKey = true
		} else if top.items++; top.items > maxBodyItems && tooMany == nil {
			tooMany = &apiError{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Param: top.path,
				Message: fmt.Sprintf("an array of the request body holds more than %d items", maxBodyItems),
				Details: map[string]any{"max_items": maxBodyItems}}
		}
	}
	for {
		if tooMany != nil {
			return tooMany
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return badRequest("", "malformed JSON body: %v", err)
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k, _ := tok.(string)
			p := k
			if top.path != "" {
				p = top.path + "." + k
			}
			if top.seen[k] {
				return badRequest(p, "field %s appears twice in one object", p)
			}
			top.seen[k], top.key, top.wantKey = true, p, false
			continue
		}
		d, ok := tok.(json.Delim)
		switch {
		case ok && (d == '{' || d == '['):
			path := ""
			if n := len(stack); n > 0 {
				path = stack[n-1].key
				if !stack[n-1].obj {
					path = stack[n-1].path
				}
			}
			if len(stack) >= maxBodyDepth {
				return badRequest(path, "request body is nested deeper than %d levels", maxBodyDepth)
			}
			stack = append(stack, &frame{obj: d == '{', wantKey: d == '{', seen: map[string]bool{}, path: path})
		case ok && d == ']':
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
