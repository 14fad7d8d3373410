package refharness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/cardsig"
	"github.com/harn-conform/conform/internal/receipt"
)

// Probes of the agent-card signing faults, registered with the others in
// faults_test.go. Each looks at the served card with the server's own
// receipt key, so it works whatever the key directory says.

func init() {
	for f, p := range cardProbes {
		probes[f] = p
	}
}

// cardSignature is the served card's signature object and the bytes it
// may cover: the canonical card, and the served text with the signature
// member cut out.
type cardSignature struct {
	obj         map[string]any
	sig         []byte
	canon, text []byte
}

func (p *probeEnv) cardSignature() (*cardSignature, error) {
	r := p.do("GET", "/v1/agent-card", nil)
	if r.Code != 200 {
		return nil, fmt.Errorf("GET /v1/agent-card: status %d", r.Code)
	}
	obj, _ := r.Body[cardsig.MemberSignature].(map[string]any)
	if obj == nil {
		return nil, nil
	}
	canon, err := cardsig.Canonical(r.Raw)
	if err != nil {
		return nil, err
	}
	text, err := cardsig.Attach(bytes.TrimSpace(r.Raw))
	if err != nil {
		return nil, err
	}
	v, _ := obj["value"].(string)
	sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, cardsig.ValuePrefix))
	if err != nil {
		return nil, fmt.Errorf("signature value %q: %v", v, err)
	}
	return &cardSignature{obj: obj, sig: sig, canon: canon, text: text}, nil
}

func (c *cardSignature) over(p *probeEnv, msg []byte) bool {
	return ed25519.Verify(p.s.rkey.priv.Public().(ed25519.PublicKey), msg, c.sig)
}

var cardProbes = map[Fault]probe{
	FaultCardUnsigned: func(p *probeEnv) error {
		c, err := p.cardSignature()
		if err == nil && c == nil {
			err = errors.New("the agent card carries no signature")
		}
		return err
	},
	FaultCardSignatureStale: func(p *probeEnv) error {
		c, err := p.cardSignature()
		if err != nil || c == nil {
			return err
		}
		if !c.over(p, c.canon) && !c.over(p, c.text) {
			return errors.New("the card's signature verifies over neither its canonical bytes nor its text")
		}
		return nil
	},
	FaultCardSignsRawJSON: func(p *probeEnv) error {
		c, err := p.cardSignature()
		if err != nil || c == nil {
			return err
		}
		if !c.over(p, c.canon) && c.over(p, c.text) {
			return errors.New("the card's signature is over its JSON text, not its canonical bytes")
		}
		return nil
	},
	FaultCardNoKeyID: func(p *probeEnv) error {
		c, err := p.cardSignature()
		if err != nil || c == nil {
			return err
		}
		for _, m := range []string{"algorithm", "key_id"} {
			if s, _ := c.obj[m].(string); s == "" {
				return fmt.Errorf("the card's signature object has no %s: %v", m, c.obj)
			}
		}
		return nil
	},
}

// TestCardSignedWithPublishedKey: the card verifies under harn-card-sig.v1
// with the key directory a client reads, under every output variant (they
// reshape the card before it is signed), and its key id is the receipt
// key's.
func TestCardSignedWithPublishedKey(t *testing.T) {
	for _, v := range append([]Variant{""}, VariantExtraFields, VariantReorderedKeys, VariantNoScenarioHook) {
		t.Run(cmpOr(string(v), "plain"), func(t *testing.T) {
			h := newHarness(t, Options{Variants: Variants{v: true}})
			dir := h.must(200, h.do("GET", KeyDirectoryPath, nil), "key directory")
			ks, err := receipt.ParseKeySet(dir.Raw)
			if err != nil {
				t.Fatal(err)
			}
			card := h.must(200, h.do("GET", "/v1/agent-card", nil, "-"+VersionHeader, "", "-Authorization", ""), "card")
			res := cardsig.Verify(card.Raw, ks)
			if !res.Valid() || len(res.Findings) > 0 {
				t.Fatalf("card does not verify: %+v\n%s", res, card.Raw)
			}
			if got := res.Signatures[0].KeyID; got != h.s.rkey.id {
				t.Errorf("card key id = %q, want the receipt key %q", got, h.s.rkey.id)
			}
		})
	}
}

// Without a published key (the receipt-unsigned variant empties the
// directory) the card is still signed, and its signature cannot be checked.
func TestCardKeyUnpublishedUnderReceiptUnsigned(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantReceiptUnsigned: true}})
	ks, err := receipt.ParseKeySet(h.must(200, h.do("GET", KeyDirectoryPath, nil), "key directory").Raw)
	if err != nil {
		t.Fatal(err)
	}
	res := cardsig.Verify(h.do("GET", "/v1/agent-card", nil).Raw, ks)
	if !res.Signed || !slices.Equal(res.ClassList(), []string{cardsig.ClassKeyUnknown}) {
		t.Errorf("card under %s: %+v", VariantReceiptUnsigned, res)
	}
}

// Each card fault gives exactly the verifier finding it is meant to.
func TestCardFaultFindings(t *testing.T) {
	for f, want := range map[Fault]string{
		FaultCardUnsigned:       cardsig.ClassUnsigned,
		FaultCardSignatureStale: cardsig.ClassSignatureInvalid,
		FaultCardSignsRawJSON:   cardsig.ClassSignatureInvalid,
		FaultCardNoKeyID:        cardsig.ClassKeyIDMissing,
	} {
		t.Run(string(f), func(t *testing.T) {
			h := newHarness(t, Options{Faults: Faults{f: true}})
			ks, err := receipt.ParseKeySet(h.do("GET", KeyDirectoryPath, nil).Raw)
			if err != nil {
				t.Fatal(err)
			}
			res := cardsig.Verify(h.do("GET", "/v1/agent-card", nil).Raw, ks)
			if got := res.ClassList(); !slices.Equal(got, []string{want}) {
				t.Errorf("findings %v, want [%s]: %v", got, want, res.Findings)
			}
			if f == FaultCardSignsRawJSON && !strings.Contains(res.Findings[0].Message, "JSON text as served") {
				t.Errorf("the finding does not name the raw text: %s", res.Findings[0].Message)
			}
			if f == FaultCardNoKeyID && !res.Verified() {
				t.Errorf("without its key id the signature should still verify with the published key: %+v", res.Signatures)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
