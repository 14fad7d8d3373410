package refharness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"net/http"

	"github.com/harn-conform/conform/internal/cardsig"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the agent card's signature under harn-card-sig.v1
// (docs/card-signing.md), each broken one way.
var (
	FaultCardUnsigned = declare(fault.Fault{Name: "card-unsigned",
		Doc:           "the agent card carries no signature",
		Fails:         []string{"EXT-CARD-001"},
		Run:           fault.Card,
		Says:          "unsigned",
		NotApplicable: []string{"EXT-CARD-002"}})
	FaultCardSignatureStale = declare(fault.Fault{Name: "card-signature-stale",
		Doc:   "the card is edited after signing: its signature no longer verifies",
		Fails: []string{"EXT-CARD-001"},
		Run:   fault.Card,
		Says:  "does not verify over the card's canonical bytes"})
	FaultCardSignsRawJSON = declare(fault.Fault{Name: "card-signs-raw-json",
		Doc:   "the card is signed over its indented JSON text, not its RFC 8785 canonical bytes",
		Fails: []string{"EXT-CARD-001"},
		Run:   fault.Card,
		Says:  "JSON text as served"})
	FaultCardNoKeyID = declare(fault.Fault{Name: "card-signature-no-key-id",
		Doc:   "the card's signature object names no key_id (the signature itself is right)",
		Fails: []string{"EXT-CARD-002"},
		Run:   fault.Card,
		Says:  "key_id"})
)

// serveCard answers GET /v1/agent-card: the card, rendered like every
// answer (output faults and variants apply), then signed under the
// card-signing profile harn-card-sig.v1 (docs/card-signing.md) with the
// receipt signing key, whose public half the key directory (GET
// /v1/receipt-keys) publishes under the same key id. The card names the
// request's base URL and the current personas, so it is signed as served,
// per response; signing after rendering keeps the signature over exactly
// what is sent.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	b, err := s.render(s.agentCard(baseURL(r)))
	if err == nil {
		b, err = s.signCard(b)
	}
	if err != nil {
		s.writeError(w, r, internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	w.Write([]byte("\n"))
}

// signCard signs rendered card bytes, or breaks the signature as a card
// fault says.
func (s *Server) signCard(card []byte) ([]byte, error) {
	f, k := s.opts.Faults, s.rkey
	switch {
	case f.Has(FaultCardUnsigned):
		return card, nil
	case f.Has(FaultCardSignsRawJSON):
		// Signs the JSON text it sends (indented), not its canonical form.
		var text bytes.Buffer
		if err := json.Indent(&text, card, "", "  "); err != nil {
			return nil, err
		}
		return cardsig.Attach(text.Bytes(), cardsig.Object{Algorithm: cardsig.Ed25519, KeyID: k.id,
			Value: cardsig.EncodeValue(ed25519.Sign(k.priv, text.Bytes()))})
	case f.Has(FaultCardNoKeyID):
		canon, err := cardsig.Canonical(card)
		if err != nil {
			return nil, err
		}
		return cardsig.Attach(card, cardsig.Object{Algorithm: cardsig.Ed25519, Value: cardsig.EncodeValue(ed25519.Sign(k.priv, canon))})
	}
	signed, err := cardsig.Sign(card, k.priv, k.id)
	if err != nil || !f.Has(FaultCardSignatureStale) {
		return signed, err
	}
	// Edited after signing: the description changes, the signature stays.
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(signed))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	desc, _ := doc["description"].(string)
	doc["description"] = desc + " (edited after signing)"
	return json.Marshal(doc)
}
