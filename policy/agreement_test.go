package policy

import (
	"context"
	"reflect"
	"testing"

	"github.com/h4r/h4r"
)

func ptr(v float64) *float64 { return &v }

func spec(level h4r.SecurityLevel, groups ...string) h4r.Specialist {
	return h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: level, AuthorizedGroups: groups}
}

func memory(m h4r.Metadata) *h4r.Item {
	return &h4r.Item{
		ID: "mem-001", Kind: "test_failure", Text: "login-spec-001 failed: element #login-button not found",
		Content:  map[string]any{"test": "login-spec-001", "personalData": map[string]any{"email": "a@b.c"}},
		Metadata: m,
	}
}

func allowed() h4r.Decision {
	return h4r.Decision{Allow: true, RedactedFields: []string{}, Reason: ReasonAllowed}
}
func denied(reason string) h4r.Decision {
	return h4r.Decision{Allow: false, RedactedFields: []string{}, Reason: reason}
}
func redacted(fields ...string) h4r.Decision {
	return h4r.Decision{Allow: true, Redact: true, RedactedFields: fields, Reason: ReasonPII}
}

// decisionCases is the table that both the bundled Rego and LocalRules must
// decide as expected: every level, each rule alone and combined, the
// boundaries, metadata defaults and group overlaps.
var decisionCases = []struct {
	name string
	spec h4r.Specialist
	meta h4r.Metadata
	want h4r.Decision
}{
	{"public, metadata defaults", spec(h4r.Public), h4r.Metadata{}, allowed()},
	{"internal, metadata defaults", spec(h4r.Internal), h4r.Metadata{}, allowed()},
	{"confidential, metadata defaults", spec(h4r.Confidential), h4r.Metadata{}, allowed()},
	{"restricted, metadata defaults", spec(h4r.Restricted), h4r.Metadata{}, allowed()},

	{"sensitivity 0.71 denied to public", spec(h4r.Public), h4r.Metadata{Sensitivity: ptr(0.71)}, denied("sensitivity")},
	{"sensitivity 0.71 denied to internal", spec(h4r.Internal), h4r.Metadata{Sensitivity: ptr(0.71)}, denied("sensitivity")},
	{"sensitivity 0.71 allowed to confidential", spec(h4r.Confidential), h4r.Metadata{Sensitivity: ptr(0.71)}, allowed()},
	{"sensitivity 1 allowed to restricted", spec(h4r.Restricted), h4r.Metadata{Sensitivity: ptr(1)}, allowed()},
	{"sensitivity exactly 0.7 allowed to public", spec(h4r.Public), h4r.Metadata{Sensitivity: ptr(0.7)}, allowed()},
	{"sensitivity just above 0.7 denied to internal", spec(h4r.Internal), h4r.Metadata{Sensitivity: ptr(0.7000000000000001)}, denied("sensitivity")},
	{"sensitivity 0.9 denied to an unknown level", spec(h4r.SecurityLevel(9)), h4r.Metadata{Sensitivity: ptr(0.9)}, denied("sensitivity")},

	{"pii redacts its field and the text", spec(h4r.Public), h4r.Metadata{ContainsPII: true, PIIFields: []string{"$.content.personalData"}}, redacted("$.content.personalData", "$.text")},
	{"pii redacts every field in order, the text once", spec(h4r.Internal), h4r.Metadata{ContainsPII: true, PIIFields: []string{"$.text", "$.content.personalData.email"}}, redacted("$.text", "$.content.personalData.email")},
	{"pii in a clean text redacts only its fields", spec(h4r.Internal), h4r.Metadata{ContainsPII: true, TextClean: true, PIIFields: []string{"$.content.personalData"}}, redacted("$.content.personalData")},
	{"pii in a clean text named anyway is redacted", spec(h4r.Internal), h4r.Metadata{ContainsPII: true, TextClean: true, PIIFields: []string{"$.text"}}, redacted("$.text")},
	{"pii without fields redacts content and text", spec(h4r.Public), h4r.Metadata{ContainsPII: true}, redacted("$.content", "$.text")},
	{"pii without fields in a clean text redacts content", spec(h4r.Public), h4r.Metadata{ContainsPII: true, TextClean: true}, redacted("$.content")},
	{"pii fields without the pii flag are ignored", spec(h4r.Public), h4r.Metadata{PIIFields: []string{"$.text"}}, allowed()},
	{"a clean text without the pii flag changes nothing", spec(h4r.Public), h4r.Metadata{TextClean: true}, allowed()},

	{"credentials denied to public", spec(h4r.Public), h4r.Metadata{HasCredentials: true}, denied("credentials")},
	{"credentials denied to restricted", spec(h4r.Restricted), h4r.Metadata{HasCredentials: true}, denied("credentials")},

	{"trust 0.29 denied", spec(h4r.Restricted), h4r.Metadata{Trust: ptr(0.29)}, denied("low_trust")},
	{"trust 0 denied", spec(h4r.Public), h4r.Metadata{Trust: ptr(0)}, denied("low_trust")},
	{"trust exactly 0.3 allowed", spec(h4r.Public), h4r.Metadata{Trust: ptr(0.3)}, allowed()},
	{"trust 0.1+0.2 allowed", spec(h4r.Public), h4r.Metadata{Trust: ptr(0.1 + 0.2)}, allowed()},
	{"trust missing takes default 0.5", spec(h4r.Public), h4r.Metadata{Importance: ptr(0.9)}, allowed()},

	{"groups overlap on the only group", spec(h4r.Public, "qa"), h4r.Metadata{RestrictedToGroups: []string{"qa"}}, allowed()},
	{"groups overlap on one of several", spec(h4r.Public, "dev", "ops"), h4r.Metadata{RestrictedToGroups: []string{"qa", "ops"}}, allowed()},
	{"groups without overlap denied", spec(h4r.Restricted, "dev"), h4r.Metadata{RestrictedToGroups: []string{"qa"}}, denied("group_restricted")},
	{"group match is case-sensitive", spec(h4r.Restricted, "QA"), h4r.Metadata{RestrictedToGroups: []string{"qa"}}, denied("group_restricted")},
	{"restricted item, specialist with empty groups", spec(h4r.Restricted), h4r.Metadata{RestrictedToGroups: []string{"qa"}}, denied("group_restricted")},
	{"empty restriction allows anyone", spec(h4r.Public), h4r.Metadata{RestrictedToGroups: []string{}}, allowed()},

	{"sensitivity and credentials both named", spec(h4r.Public), h4r.Metadata{Sensitivity: ptr(0.9), HasCredentials: true}, denied("credentials,sensitivity")},
	{"all four denials named, pii not redacted", spec(h4r.Public, "dev"), h4r.Metadata{
		Sensitivity: ptr(0.95), HasCredentials: true, Trust: ptr(0.1), RestrictedToGroups: []string{"qa"},
		ContainsPII: true, PIIFields: []string{"$.text"},
	}, denied("credentials,group_restricted,low_trust,sensitivity")},
	{"sensitive pii for cleared group member redacted", spec(h4r.Confidential, "qa"), h4r.Metadata{
		Sensitivity: ptr(0.9), RestrictedToGroups: []string{"qa"}, ContainsPII: true, PIIFields: []string{"$.content.personalData"},
	}, redacted("$.content.personalData", "$.text")},
	{"credentials with pii denied", spec(h4r.Internal), h4r.Metadata{HasCredentials: true, ContainsPII: true, PIIFields: []string{"$.text"}}, denied("credentials")},
	{"low trust though groups overlap", spec(h4r.Internal, "qa"), h4r.Metadata{Trust: ptr(0.2), RestrictedToGroups: []string{"qa"}}, denied("low_trust")},
	{"restricted level does not bypass groups", spec(h4r.Restricted, "dev"), h4r.Metadata{Sensitivity: ptr(0.9), RestrictedToGroups: []string{"qa"}}, denied("group_restricted")},
	{"extra metadata keys, even a stray trust, change nothing", spec(h4r.Internal), h4r.Metadata{Extra: map[string]any{"test_type": "e2e", "status": "failed", "trust": 0.0}}, allowed()},
}

// TestLocalRulesAgreeWithRego asserts the expected decision of every case
// from both the bundled Rego policy and LocalRules.
func TestLocalRulesAgreeWithRego(t *testing.T) {
	engine, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range decisionCases {
		t.Run(tc.name, func(t *testing.T) {
			item := memory(tc.meta)
			rego, err := engine.Decide(t.Context(), tc.spec, item)
			if err != nil {
				t.Fatalf("rego: %v", err)
			}
			local, err := LocalRules{}.Decide(t.Context(), tc.spec, item)
			if err != nil {
				t.Fatalf("local: %v", err)
			}
			if !reflect.DeepEqual(rego, tc.want) {
				t.Errorf("rego decided %+v, want %+v", rego, tc.want)
			}
			if !reflect.DeepEqual(local, tc.want) {
				t.Errorf("local rules decided %+v, want %+v", local, tc.want)
			}
		})
	}
}

// FuzzLocalRulesAgreeWithRego: for any metadata and specialist, the bundled
// Rego policy (one by one and in a batch) and the Go rules decide alike.
func FuzzLocalRulesAgreeWithRego(f *testing.F) {
	engine, err := New(context.Background(), WithDecisionMemo(0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(0.71, 0.29, false, true, uint8(1), uint8(2), uint8(0))
	f.Add(0.7, 0.3, true, false, uint8(0), uint8(0), uint8(3))
	f.Add(1.0, 0.0, true, true, uint8(7), uint8(7), uint8(4))
	f.Add(0.2, 0.9, false, true, uint8(0), uint8(0), uint8(1|1<<3))      // pii naming no field
	f.Add(0.2, 0.9, false, true, uint8(0), uint8(0), uint8(2|0x80))      // pii in content, clean text
	f.Add(0.2, 0.9, false, true, uint8(0), uint8(0), uint8(3|3<<3|0x80)) // pii in text and content, "clean" text
	groups := []string{"qa", "ops", "dev"}
	pick := func(bits uint8) []string {
		var out []string
		for i, g := range groups {
			if bits&(1<<i) != 0 {
				out = append(out, g)
			}
		}
		return out
	}
	f.Fuzz(func(t *testing.T, sensitivity, trust float64, creds, pii bool, restricted, authorized, level uint8) {
		// level's high bits pick the PII fields and textClean, so that every
		// shape of rule 2 is fuzzed without changing the corpus format.
		fields := [][]string{{"$.content.personalData"}, nil, {"$.text"}, {"$.content.a", "$.text"}}[(level>>3)%4]
		clean := level&0x80 != 0
		if sensitivity < 0 || sensitivity > 1 || trust < 0 || trust > 1 {
			return // the store rejects scores outside [0, 1]
		}
		m := h4r.Metadata{Sensitivity: &sensitivity, Trust: &trust, HasCredentials: creds, RestrictedToGroups: pick(restricted), TextClean: clean}
		if pii {
			m.ContainsPII, m.PIIFields = true, fields
		}
		who := spec(h4r.SecurityLevel(level%5), pick(authorized)...)
		item := memory(m)
		want, err := LocalRules{}.Decide(t.Context(), who, item)
		if err != nil {
			t.Fatal(err)
		}
		got, err := engine.Decide(t.Context(), who, item)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("rego %+v (%v), local %+v for %+v, %+v", got, err, want, m, who)
		}
		batch := engine.DecideBatch(t.Context(), who, []*h4r.Item{item, item})
		for _, r := range batch {
			if r.Err != nil || !reflect.DeepEqual(r.Decision, want) {
				t.Fatalf("batch %+v, local %+v", r, want)
			}
		}
	})
}
