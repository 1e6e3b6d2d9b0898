package h4r_test

import (
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// TestPlanLeavesTheRequestAlone: planning validates and fills defaults in
// the plan, never in the caller's request, and parses the filters once.
func TestPlanLeavesTheRequestAlone(t *testing.T) {
	tests := []struct {
		name      string
		req       h4r.ContextRequest
		wantType  h4r.QueryType
		wantLimit int
		wantKinds []string
	}{
		{"defaults", h4r.ContextRequest{Query: h4r.Query{Text: "login"}}, h4r.DefaultQueryType, h4r.DefaultLimit, nil},
		{"given values kept", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "login"}, Limit: 3}, h4r.QueryKeyword, 3, nil},
		{"filters parsed", h4r.ContextRequest{Query: h4r.Query{Text: "login", Filters: map[string]any{"kind": "test_failure"}}}, h4r.DefaultQueryType, h4r.DefaultLimit, []string{"test_failure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.req
			plan, err := tt.req.Plan("")
			if err != nil {
				t.Fatal(err)
			}
			if tt.req.Query.Type != before.Query.Type || tt.req.Limit != before.Limit {
				t.Errorf("the request changed: %+v, was %+v", tt.req, before)
			}
			if plan.Request.Query.Type != tt.wantType || plan.Request.Limit != tt.wantLimit {
				t.Errorf("plan type %q limit %d, want %q %d", plan.Request.Query.Type, plan.Request.Limit, tt.wantType, tt.wantLimit)
			}
			if len(plan.Filters.Kinds) != len(tt.wantKinds) || (len(tt.wantKinds) > 0 && plan.Filters.Kinds[0] != tt.wantKinds[0]) {
				t.Errorf("plan filters kinds %v, want %v", plan.Filters.Kinds, tt.wantKinds)
			}
		})
	}
	t.Run("invalid names the field under the prefix", func(t *testing.T) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "x", Type: "fuzzy"}}
		_, err := req.Plan("payload")
		if e, ok := err.(*h4r.Error); !ok || e.Field != "payload.query.type" {
			t.Errorf("error %v, want one naming payload.query.type", err)
		}
	})
}

// TestParseFiltersTagLists: "tags" requires every tag, "anyTags" at least
// one; both take one string or a list, and a bad element is named.
func TestParseFiltersTagLists(t *testing.T) {
	tests := []struct {
		name      string
		raw       map[string]any
		wantTags  []string
		wantAny   []string
		wantField string // non-empty: the error's field
	}{
		{"tags list", map[string]any{"tags": []any{"a", "b"}}, []string{"a", "b"}, nil, ""},
		{"anyTags list", map[string]any{"anyTags": []any{"a", "b"}}, nil, []string{"a", "b"}, ""},
		{"anyTags one string", map[string]any{"anyTags": "a"}, nil, []string{"a"}, ""},
		{"both", map[string]any{"tags": "x", "anyTags": []any{"a", "b"}}, []string{"x"}, []string{"a", "b"}, ""},
		{"anyTags element not a string", map[string]any{"anyTags": []any{"a", 1.0}}, nil, nil, "filters.anyTags[1]"},
		{"anyTags NUL", map[string]any{"anyTags": []any{"a\x00"}}, nil, nil, "filters.anyTags[0]"},
		{"anyTags number", map[string]any{"anyTags": 3.0}, nil, nil, "filters.anyTags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := h4r.ParseFilters("filters", tt.raw)
			if tt.wantField != "" {
				if e, ok := err.(*h4r.Error); !ok || e.Field != tt.wantField || e.Code != h4r.EINVALID {
					t.Fatalf("error %v, want invalid_argument naming %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Tags, tt.wantTags) || !slices.Equal(f.AnyTags, tt.wantAny) {
				t.Errorf("tags %v anyTags %v, want %v %v", f.Tags, f.AnyTags, tt.wantTags, tt.wantAny)
			}
			if _, isMeta := f.Metadata["anyTags"]; isMeta {
				t.Error("anyTags was read as a metadata equality filter")
			}
			if f.Empty() {
				t.Error("Empty() is true for a tag filter")
			}
		})
	}
}

// TestPlanAsOf: as_of is parsed into the plan; a value that is not RFC
// 3339 is refused naming the field.
func TestPlanAsOf(t *testing.T) {
	tests := []struct {
		name    string
		asOf    string
		want    string // RFC 3339 of the plan's AsOf; "" for zero
		wantErr bool
	}{
		{"absent is zero", "", "", false},
		{"utc", "2023-06-25T13:22:00Z", "2023-06-25T13:22:00Z", false},
		{"offset kept as the same instant", "2023-06-25T15:22:00+02:00", "2023-06-25T13:22:00Z", false},
		{"date only refused", "2023-06-25", "", true},
		{"words refused", "yesterday", "", true},
		{"too long refused", "2023-06-25T13:22:00.000000000000000000000000000000000000000000000000000Z", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := h4r.ContextRequest{Query: h4r.Query{Text: "x"}, AsOf: tt.asOf}
			plan, err := req.Plan("payload")
			if tt.wantErr {
				if e, ok := err.(*h4r.Error); !ok || e.Field != "payload.as_of" {
					t.Errorf("error %v, want one naming payload.as_of", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if !plan.AsOf.IsZero() {
				got = plan.AsOf.UTC().Format(time.RFC3339)
			}
			if got != tt.want {
				t.Errorf("plan as_of %q, want %q", got, tt.want)
			}
		})
	}
}
