package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/cardsig"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// HarnAgentCard signatures (EXT-CARD-001, EXT-CARD-002), under conform's
// card-signing profile harn-card-sig.v1 (docs/card-signing.md): the card
// GET /v1/agent-card serves is verified with the keys of the target's key
// directory, read where discovery advertises it or at /v1/receipt-keys.
var _ = Describe("Agent card signatures", func() {
	It("signs its HarnAgentCard under harn-card-sig.v1 with a key it publishes", suite.Req(cardsig.ReqSignature, cardsig.ReqNames), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/agent-card", NoAuth: true}, cardsig.ReqSignature)
		if resp.Status != http.StatusOK || !json.Valid(resp.Body) {
			// The card itself is Core's concern (CORE-CARD-001): one defect,
			// one failure.
			suite.Unverified(fmt.Sprintf("GET /v1/agent-card answers %s, so there is no card whose signature could be checked", resp),
				"serve the HarnAgentCard at GET /v1/agent-card (CORE-CARD-001)")
		}
		var keys *receipt.KeySet
		var keysAt, noKeys string
		if cardsig.Verify(resp.Body, nil).Signed {
			keys, keysAt, noKeys = cardKeys(ctx)
		}
		j := judgeCard(resp.Body, keys, keysAt, noKeys)
		suite.CheckBlocks(cardsig.ReqSignature, j.signature, j.blocks...)
		switch {
		case j.namesNA != "":
			suite.NotApplicableTo(cardsig.ReqNames, j.namesNA)
		case len(j.blocks) == 0:
			suite.Check(cardsig.ReqNames, j.names)
		}
		if j.unverified != "" {
			suite.NothingToCheck(cardsig.ReqSignature, j.unverified, j.remedy)
		}
		if j.note != "" {
			suite.Note(j.note)
		}
	})
})

// cardJudgement is what the spec records about one card.
type cardJudgement struct {
	signature error    // EXT-CARD-001 failed
	blocks    []string // what that failure kept from being checked
	names     error    // EXT-CARD-002 failed
	namesNA   string   // EXT-CARD-002 does not apply (an unsigned card), why
	// unverified says why no signature could be checked (EXT-CARD-001 is
	// then unverified, never passed), remedy what the target can do.
	unverified, remedy string
	note               string // which key verified the card, for the report
}

// Remedies of an unchecked card signature.
const (
	remedyPublishKey = "publish the card's signing key under its key_id in the key directory (docs/card-signing.md §4): serve it at " +
		check.DefaultKeyDirectory + ", or advertise its location as capabilities[\"" + check.KeyDirectoryCapability + "\"] in the discovery document"
	remedyEd25519   = "sign the card with ed25519 as well (docs/card-signing.md §3): it is the algorithm the profile defines and the suite checks"
	remedySigObject = "give the signature object its algorithm, key_id and value (docs/card-signing.md §3)"
)

// judgeCard judges a card (the body of GET /v1/agent-card) under the
// profile with the published keys (nil: none could be read, noKeys says
// why; keysAt says where they were read). An Extended server's card must
// be signed: an unsigned one fails EXT-CARD-001, and EXT-CARD-002 (about
// what a signed card names) does not apply to it. A signature whose key
// the target does not publish, or in an algorithm the suite does not
// implement, leaves EXT-CARD-001 unverified with a remedy: neither passed
// nor failed.
func judgeCard(card []byte, keys *receipt.KeySet, keysAt, noKeys string) cardJudgement {
	res := cardsig.Verify(card, keys)
	var j cardJudgement
	if err := res.Err(cardsig.ReqSignature); err != nil {
		j.signature = err
		switch {
		case slices.Contains(res.ClassList(), cardsig.ClassJSONInvalid):
			j.blocks = []string{cardsig.ReqNames} // whether it is signed cannot be told
		case !res.Signed:
			j.namesNA = "the card carries no signature object, so it names no algorithm or key id"
		}
		j.names = res.Err(cardsig.ReqNames)
		return j
	}
	j.names = res.Err(cardsig.ReqNames)
	if res.Verified() {
		var by []string
		for _, s := range res.Signatures {
			if s.Status == cardsig.StatusVerified {
				by = append(by, fmt.Sprintf("%s by key %q", s.Pointer, s.VerifiedWith))
			}
		}
		j.note = fmt.Sprintf("agent card signature (%s): %s verif%s over the canonical card (signed bytes %s), with keys read from %s",
			cardsig.Profile, strings.Join(by, " and "), plural(len(by), "y", "ies"), res.Digest, keysAt)
		if u := res.Unchecked(); len(u) > 0 {
			j.note += fmt.Sprintf("; %d other signature(s) not checked: %s", len(u), joinFindings(u))
		}
		return j
	}
	// Signed, nothing failed, nothing verified.
	var why []string
	remedy := remedySigObject
	for _, f := range res.Unchecked() {
		switch f.Class {
		case cardsig.ClassNoKeys:
			why = append(why, fmt.Sprintf("%s: no published keys to check it with (%s)", f.Pointer, noKeys))
			remedy = remedyPublishKey
		case cardsig.ClassKeyUnknown:
			why = append(why, fmt.Sprintf("%s: %s (keys read from %s)", f.Pointer, f.Message, keysAt))
			remedy = remedyPublishKey
		case cardsig.ClassAlgorithmUnsupported:
			why = append(why, f.Pointer+": "+f.Message)
			if remedy == remedySigObject {
				remedy = remedyEd25519
			}
		}
	}
	if len(why) == 0 {
		why = append(why, "no signature object states what to check: "+joinFindings(res.Failures(cardsig.ReqNames)))
	}
	j.unverified = "the card is signed, but no signature could be checked: " + strings.Join(why, "; ")
	j.remedy = remedy
	return j
}

// cardKeys reads the key directory the way the Receipts level does
// (docs/receipts.md §4): where discovery advertises it, else the default
// location. It returns the keys and where they were read, or why there
// are none.
func cardKeys(ctx context.Context) (*receipt.KeySet, string, string) {
	GinkgoHelper()
	env := suite.Env()
	path, q, advertised, err := check.KeyDirectoryPath(env.Discovery.Raw, env.Config.Target)
	if err != nil {
		return nil, "", err.Error()
	}
	where := fmt.Sprintf("discovery advertises no capabilities[%q], and %s", check.KeyDirectoryCapability, path)
	if advertised {
		where = "the location discovery advertises, " + path
	}
	req := client.Request{Path: path, Query: q}
	if path != check.DefaultKeyDirectory {
		// The target's own choice of location: no OpenAPI operation, by design.
		req.Probe = "the key directory location the target advertises in capabilities[\"" + check.KeyDirectoryCapability + "\"], outside the OpenAPI document"
	}
	resp := suite.Do(ctx, req, cardsig.ReqSignature)
	if resp.Status != http.StatusOK {
		return nil, "", fmt.Sprintf("%s answers %s", where, resp)
	}
	ks, err := receipt.ParseKeySet(resp.Body)
	if err != nil {
		return nil, "", fmt.Sprintf("%s answers %s: %v", where, resp, err)
	}
	return ks, path, ""
}

func joinFindings(fs []cardsig.Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

func plural(n int, many, one string) string {
	if n == 1 {
		return one
	}
	return many
}
