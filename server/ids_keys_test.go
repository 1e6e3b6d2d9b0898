package server_test

import (
	"net/http"
	"testing"

	"github.com/h4r/h4r"
)

// TestIngestRefusesLookalikes is the regression test of what an adversarial
// client found about ids and keys: encoding/json rewrote invalid UTF-8 to
// U+FFFD (two different ids collided and one overwrote the other), let a
// later "METADATA" replace "metadata", kept the last of duplicate keys,
// read "restrictedToGroups": [null] as [""], and metadata keys that read as
// policy keys ("hasCredentials " with a space, a zero-width space inside)
// landed where no policy looks. Each is now refused, naming the field, and
// nothing is written.
func TestIngestRefusesLookalikes(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantField string
	}{
		{"invalid UTF-8 in an id", "{\"id\": \"a\xff\", \"text\": \"x\"}", "id"},
		{"lone surrogate in an id", `{"id": "a\udc00", "text": "x"}`, "id"},
		{"top-level key in another case", `{"id": "a", "text": "x", "metadata": {}, "METADATA": {"hasCredentials": true}}`, "METADATA"},
		{"duplicate top-level key", `{"id": "a", "text": "x", "metadata": {"hasCredentials": true}, "metadata": {}}`, "metadata"},
		{"duplicate key inside metadata", `{"id": "a", "text": "x", "metadata": {"hasCredentials": true, "hasCredentials": false}}`, "metadata.hasCredentials"},
		{"duplicate key in a batch item", `{"items": [{"id": "a", "text": "x", "text": "y"}]}`, "items[0].text"},
		{"null group", `{"id": "a", "text": "x", "metadata": {"restrictedToGroups": [null]}}`, "metadata.restrictedToGroups[0]"},
		{"policy key with a trailing space", `{"id": "a", "text": "x", "metadata": {"hasCredentials ": true}}`, `metadata["hasCredentials "]`},
		{"policy key with a zero-width space", `{"id": "a", "text": "x", "metadata": {"has\u200bCredentials": true}}`, "metadata[\"has\u200bCredentials\"]"},
	}
	st := newStack(t)
	base := st.serve(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+"/v1/items", tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if e := checkErrorShape(t, r); e.Code != h4r.EINVALID || e.Field != tt.wantField {
				t.Errorf("error %+v, want invalid_argument naming %s", e, tt.wantField)
			}
			if _, err := st.store.Get(t.Context(), "a"); h4r.ErrorCode(err) != h4r.ENOTFOUND {
				t.Errorf("item a exists after a refused ingest (%v)", err)
			}
		})
	}
}
