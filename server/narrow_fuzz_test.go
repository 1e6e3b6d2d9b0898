package server

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// FuzzNarrow throws arbitrary claims (a context-pack body's specialist, an
// envelope's meta.from) at principals of every level and group set, and
// checks the rule authentication rests on: a claim is either refused with
// invalid_argument or permission_denied naming a field under the claim,
// or it yields a specialist that narrows the principal — same id and type,
// a level no higher, only the principal's groups — without changing the
// principal. Seeds: testdata/fuzz/FuzzNarrow.
func FuzzNarrow(f *testing.F) {
	for _, seed := range []struct {
		claim  string
		level  uint8
		groups uint8
	}{
		{`{"id": "bot", "securityLevel": "restricted"}`, 0, 0},
		{`{"securityLevel": "public", "authorizedGroups": ["qa"]}`, 2, 1},
		{`{"authorizedGroups": ["qa", "ops", "qa"]}`, 1, 3},
		{`{"authorizedGroups": []}`, 3, 7},
		{`{"type": "human"}`, 1, 0},
		{`{"id": "other"}`, 3, 7},
		{`{"securityLevel": "secret"}`, 1, 1},
		{`{"securityLevel": 3}`, 1, 1},
		{`{"authorizedGroups": null, "securityLevel": null}`, 2, 2},
		{`{"id": "bot", "extra": true}`, 0, 0},
		{`null`, 2, 5},
		{`[]`, 2, 5},
	} {
		f.Add([]byte(seed.claim), seed.level, seed.groups)
	}
	all := []string{"qa", "ops", "sec"}
	f.Fuzz(func(t *testing.T, raw []byte, level, groupMask uint8) {
		principal := h4r.Specialist{Type: "specialist", ID: "bot", SecurityLevel: h4r.SecurityLevel(level % 4), AuthorizedGroups: []string{}}
		for i, g := range all {
			if groupMask&(1<<i) != 0 {
				principal.AuthorizedGroups = append(principal.AuthorizedGroups, g)
			}
		}
		before := slices.Clone(principal.AuthorizedGroups)
		got, err := narrow(new(jsonstrict.Decoder), principal, "meta.from", json.RawMessage(raw))
		if !slices.Equal(principal.AuthorizedGroups, before) {
			t.Fatalf("narrow changed the principal's groups: %v → %v", before, principal.AuthorizedGroups)
		}
		if err != nil {
			var e *h4r.Error
			if !errors.As(err, &e) || (e.Code != h4r.EINVALID && e.Code != h4r.EFORBIDDEN) {
				t.Fatalf("refusal %v is not invalid_argument or permission_denied", err)
			}
			if !strings.HasPrefix(e.Field, "meta.from") {
				t.Fatalf("refusal names field %q, not one under meta.from", e.Field)
			}
			return
		}
		if !got.Narrows(principal) || got.Type != principal.Type {
			t.Fatalf("claim %s turned principal %+v into %+v, which does not narrow it", raw, principal, got)
		}
		if got.AuthorizedGroups == nil {
			t.Fatalf("groups are nil (the policy input wants a list)")
		}
		if len(got.AuthorizedGroups) > 0 && len(principal.AuthorizedGroups) > 0 && &got.AuthorizedGroups[0] == &principal.AuthorizedGroups[0] {
			t.Fatalf("the result shares the principal's group slice")
		}
	})
}
