package extended

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/cards"
	"github.com/harn-conform/conform/internal/cardsig"
	"github.com/harn-conform/conform/internal/receipt"
)

// judgeCard on the card fixtures: which requirement fails, which does not
// apply, and when EXT-CARD-001 is unverified (never passed) with which
// remedy.
func TestJudgeCard(t *testing.T) {
	dir, err := cards.Read("keys/card-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := receipt.ParseKeySet(dir)
	if err != nil {
		t.Fatal(err)
	}
	const noKeys = "GET /v1/receipt-keys answers 404"
	for _, tc := range []struct {
		file      string
		noKeys    bool
		signature string // substring of the EXT-CARD-001 failure ("" none)
		names     string // substring of the EXT-CARD-002 failure ("" none)
		namesNA   bool
		blocked   bool
		remedy    string // EXT-CARD-001 unverified with this remedy ("" verified or failed)
		note      string
	}{
		{file: "valid/signed.json", note: "verifies over the canonical card"},
		{file: "valid/signed-reordered.json", note: "verifies"},
		{file: "valid/rotation.json", note: "/signature by key \"cardkey_conform_fixture_2026_04\" and /signatures/0 by key \"cardkey_conform_fixture_2025_10\" verify"},
		{file: "valid/signed.json", noKeys: true, remedy: remedyPublishKey},
		{file: "invalid/unsigned.json", signature: "unsigned: the card carries no signature", namesNA: true},
		{file: "invalid/signature-null.json", signature: "unsigned: the card carries no signature", namesNA: true},
		{file: "invalid/tampered.json", signature: "signature_invalid"},
		{file: "invalid/raw-json.json", signature: "JSON text as served"},
		{file: "invalid/wrong-key.json", signature: "signature_invalid"},
		{file: "invalid/no-value.json", signature: "value_missing"},
		{file: "invalid/no-key-id.json", names: "key_id_missing: /signature", note: "verifies"},
		{file: "invalid/no-algorithm.json", names: "algorithm_missing: /signature", note: "verifies"},
		{file: "invalid/signature-not-object.json", names: "signature_malformed", remedy: remedySigObject},
		{file: "invalid/unknown-key.json", remedy: remedyPublishKey},
		{file: "invalid/unsupported-algorithm.json", remedy: remedyEd25519},
		{file: "invalid/duplicate-member.json", signature: "json_invalid", blocked: true},
	} {
		raw, err := cards.Read(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		ks, why := keys, ""
		if tc.noKeys {
			ks, why = nil, noKeys
		}
		j := judgeCard(raw, ks, "/v1/receipt-keys", why)
		name := tc.file
		if tc.noKeys {
			name += " without keys"
		}
		if !matches(j.signature, tc.signature) {
			t.Errorf("%s: EXT-CARD-001 failure %v, want one saying %q", name, j.signature, tc.signature)
		}
		if !matches(j.names, tc.names) {
			t.Errorf("%s: EXT-CARD-002 failure %v, want one saying %q", name, j.names, tc.names)
		}
		if (j.namesNA != "") != tc.namesNA || (len(j.blocks) > 0) != tc.blocked {
			t.Errorf("%s: EXT-CARD-002 not applicable %q, blocked %v; want %v, %v", name, j.namesNA, j.blocks, tc.namesNA, tc.blocked)
		}
		if j.remedy != tc.remedy || (j.unverified == "") != (tc.remedy == "") {
			t.Errorf("%s: unverified %q with remedy %q, want remedy %q", name, j.unverified, j.remedy, tc.remedy)
		}
		if tc.noKeys && !strings.Contains(j.unverified, noKeys) {
			t.Errorf("%s: the reason %q does not say why there are no keys", name, j.unverified)
		}
		if !strings.Contains(j.note, tc.note) || (tc.note == "") != (j.note == "") {
			t.Errorf("%s: note %q, want one saying %q", name, j.note, tc.note)
		}
		if j.signature == nil && j.unverified == "" && j.note == "" {
			t.Errorf("%s: EXT-CARD-001 neither failed, unverified nor verified", name)
		}
	}
	if _, _, ok := cardsig.ClassOf(cardsig.ClassNoKeys); !ok {
		t.Fatal("no_keys is not a class")
	}
}

func matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}
