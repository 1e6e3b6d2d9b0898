package h4r_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// TestMetadataKeysAreCaseSensitive: a well-known key in another case must
// not slip into Extra, where no policy rule reads it (an item could hide
// its credentials or sensitivity by a typo).
func TestMetadataKeysAreCaseSensitive(t *testing.T) {
	tests := []struct {
		name      string
		metadata  string
		wantField string // "" means accepted
	}{
		{"exact keys", `{"hasCredentials": true, "sensitivity": 0.9, "restrictedToGroups": ["ops"]}`, ""},
		{"credentials in another case", `{"HasCredentials": true}`, "metadata.HasCredentials"},
		{"sensitivity in capitals", `{"SENSITIVITY": 0.9}`, "metadata.SENSITIVITY"},
		{"groups in another case", `{"restrictedtogroups": ["ops"]}`, "metadata.restrictedtogroups"},
		{"other keys keep their case", `{"Status": "failed", "test_type": "e2e"}`, ""},
		// A key that reads as a policy key but is not one would also land in
		// Extra, unseen by policy (found by the adversarial client).
		{"credentials with a trailing space", `{"hasCredentials ": true}`, `metadata["hasCredentials "]`},
		{"sensitivity with a leading space", `{" sensitivity": 0.9}`, `metadata[" sensitivity"]`},
		{"credentials with a zero-width space", "{\"has\u200bCredentials\": true}", "metadata[\"has\u200bCredentials\"]"},
		{"groups with a byte-order mark", "{\"\ufeffrestrictedToGroups\": [\"ops\"]}", "metadata[\"\ufeffrestrictedToGroups\"]"},
		{"containsPII with a soft hyphen", "{\"contains\u00adPII\": true}", "metadata[\"contains\u00adPII\"]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it h4r.Item
			err := jsonstrict.Decode([]byte(`{"id": "a", "text": "x", "metadata": `+tt.metadata+`}`), &it, "")
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Field != tt.wantField {
				t.Fatalf("error = %v, want invalid_argument on %s", err, tt.wantField)
			}
		})
	}
	// What is accepted keeps its case in Extra.
	var m h4r.Metadata
	if err := json.Unmarshal([]byte(`{"Status": "failed"}`), &m); err != nil || m.Extra["Status"] != "failed" {
		t.Errorf("Extra = %v, %v", m.Extra, err)
	}
}
