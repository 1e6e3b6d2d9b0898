package h4r_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// TestWeightsJSONErrors: Weights and Signals refuse bad JSON with the one
// error type, naming the key relative to the object (a decoder adds the
// object's own path: "weights.recency").
func TestWeightsJSONErrors(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		wantField string
		wantMsg   string
	}{
		{"unknown signal", `{"luck": 1}`, "luck", `unknown signal "luck" (want one of relevance,`},
		{"signal in another case", `{"TRUST": 1}`, "TRUST", `(did you mean "trust"?)`},
		{"string value", `{"recency": "high"}`, "recency", `want a number that fits a 64-bit float, got "high"`},
		{"null value", `{"recency": null}`, "recency", "got null"},
		{"out of range", `{"recency": 1e400}`, "recency", "got 1e400"},
		{"not an object", `[0.5]`, "", "want an object of signal names to numbers"},
		{"first bad key in order", `{"zeta": 1, "alpha": 1}`, "alpha", `unknown signal "alpha"`},
	}
	for _, tt := range tests {
		for _, target := range []any{&h4r.Weights{}, &h4r.Signals{}} {
			t.Run(tt.name, func(t *testing.T) {
				err := json.Unmarshal([]byte(tt.input), target)
				var herr *h4r.Error
				if !errors.As(err, &herr) {
					t.Fatalf("%T: error = %v (%T), want an *h4r.Error", target, err, err)
				}
				if herr.Code != h4r.EINVALID || herr.Field != tt.wantField || !strings.Contains(herr.Message, tt.wantMsg) {
					t.Errorf("%T: %s %q %q, want invalid_argument on %q containing %q", target, herr.Code, herr.Field, herr.Message, tt.wantField, tt.wantMsg)
				}
			})
		}
	}
	var w h4r.Weights
	if err := json.Unmarshal([]byte(`{"relevance": 0.6, "trust": 0.4}`), &w); err != nil || w != (h4r.Weights{h4r.Relevance: 0.6, h4r.Trust: 0.4}) {
		t.Errorf("weights %v, %v", w, err)
	}
}
