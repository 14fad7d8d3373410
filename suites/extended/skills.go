package extended

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Skills (EXT-SKILL-001). EXT-SKILL-002 (schemas derived from a Harn pub
// fn) is not observable: the function is not on the wire.

// skillFields checks a Skill's required fields: id, name, description,
// and input_schema and output_schema each a JSON Schema object or null.
func skillFields(resp *client.Response, m map[string]any) error {
	var errs []string
	if m["object"] != "skill" {
		errs = append(errs, fmt.Sprintf("object = %v, want \"skill\"", m["object"]))
	}
	for _, f := range []string{"id", "name"} {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %v, want a non-empty string", f, m[f]))
		}
	}
	if _, ok := m["description"].(string); !ok {
		errs = append(errs, fmt.Sprintf("description is %v, want a string", m["description"]))
	}
	for _, f := range []string{"input_schema", "output_schema"} {
		v, ok := m[f]
		if !ok {
			errs = append(errs, f+" is missing, want a JSON Schema object or null")
			continue
		}
		if _, isObj := v.(map[string]any); v != nil && !isObj {
			errs = append(errs, fmt.Sprintf("%s is %v, want a JSON Schema object or null", f, v))
		}
	}
	return xFindings(resp, "skill "+xID(m), errs)
}

var _ = Describe("Skills", func() {
	It("lists Skills and reads each by id, with their schemas objects or null", suite.Req(reqSkill), func(ctx SpecContext) {
		items, ok := xList(ctx, reqSkill, "/v1/skills", nil)
		if !ok {
			return
		}
		if len(items) == 0 {
			suite.NothingToCheck(reqSkill, "GET /v1/skills lists no Skill, so no Skill's fields could be checked",
				"expose at least one Skill (the agent's callable skills, as the agent card lists them)")
			return
		}
		for i, sk := range items {
			if i == 20 {
				break // enough to judge the shape; a large catalogue is not read whole
			}
			suite.Check(reqSkill, skillFields(&client.Response{Method: http.MethodGet, URL: "/v1/skills", Status: http.StatusOK}, sk))
			id := xID(sk)
			if id == "" {
				continue
			}
			read := suite.Do(ctx, client.Request{Path: "/v1/skills/" + client.Seg(id)}, reqSkill)
			if suite.Check(reqSkill, check.Status(read, http.StatusOK)) {
				got, err := read.Object()
				if suite.Check(reqSkill, err) {
					suite.Check(reqSkill, check.SameID(read, got, id))
					suite.Check(reqSkill, skillFields(read, got))
				}
			}
		}
	})
})
