package bench

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadBEIRMapping(t *testing.T) {
	ds, err := LoadBEIR("testdata/tiny", "test")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC); !ds.Now.Equal(want) {
		t.Errorf("Now = %v, want the mapping's %v", ds.Now, want)
	}
	if len(ds.Queries) != 2 || ds.Queries[0].Scope != "c1" || ds.Queries[0].Category != "ui" {
		t.Errorf("queries = %+v, want q1 (scope c1, category ui) and q2; q3 is not judged", ds.Queries)
	}
	byID := map[string]Doc{}
	for _, d := range ds.Docs {
		byID[d.ID] = d
	}
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name  string
		id    string
		check func(Doc) bool
	}{
		{"RFC 3339 createdAt", "d1", func(d Doc) bool { return d.CreatedAt.Equal(time.Date(2026, 5, 30, 0, 0, 0, 0, time.UTC)) }},
		{"Unix-seconds createdAt", "d2", func(d Doc) bool { return d.CreatedAt.Equal(time.Unix(1780000000, 0)) }},
		{"self-link dropped", "d1", func(d Doc) bool { return reflect.DeepEqual(d.Links, []Link{{Target: "d2", Type: "cites"}}) }},
		{"array and object links", "d2", func(d Doc) bool {
			return reflect.DeepEqual(d.Links, []Link{{Target: "d3", Type: "cites"}, {Target: "d1", Type: "fixes"}})
		}},
		{"numbers and numeric strings", "d1", func(d Doc) bool {
			return reflect.DeepEqual(d.Importance, f(0.9)) && reflect.DeepEqual(d.Trust, f(0.8)) && d.AccessCount == 3
		}},
		{"sensitivity and novelty", "d3", func(d Doc) bool {
			return reflect.DeepEqual(d.Sensitivity, f(0.8)) && reflect.DeepEqual(d.Novelty, f(0.4)) && d.Importance == nil
		}},
		{"numeric scope", "d4", func(d Doc) bool { return d.Scope == "7" }},
		{"unmapped fields stay extra", "d2", func(d Doc) bool { _, ok := d.Extra["author"]; return ok && len(d.Extra) == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := byID[tt.id]; !tt.check(d) {
				t.Errorf("%s: %+v", tt.id, d)
			}
		})
	}
	items := ds.Items()
	if got := items[0].Metadata.Extra[ScopeKey]; got != "c1" {
		t.Errorf("item d1 scope = %v, want c1", got)
	}
	for _, it := range items {
		if err := it.Validate(""); err != nil {
			t.Errorf("item %s: %v", it.ID, err)
		}
	}
}

func TestParseMappingErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", `{"version": 1, "creation": "ts"}`, "creation"},
		{"wrong version", `{"version": 2}`, "version: want 1"},
		{"missing version", `{"links": "x"}`, "version"},
		{"bad clock", `{"version": 1, "now": "yesterday"}`, "now"},
		{"not an object", `[]`, "m.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMapping([]byte(tt.in), "m.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestApplyMappingErrors(t *testing.T) {
	m := Mapping{Version: 1, CreatedAt: "ts", Links: "refs", Trust: "trust", AccessCount: "uses", Scope: "scope"}
	tests := []struct {
		name, doc, want string
	}{
		{"bad time", `{"ts": "monday"}`, `"ts"`},
		{"time of the wrong type", `{"ts": true}`, `"ts"`},
		{"score out of range", `{"trust": 1.5}`, `"trust": want a number in [0, 1]`},
		{"score not a number", `{"trust": "high"}`, `"trust"`},
		{"fractional access count", `{"uses": 2.5}`, `"uses"`},
		{"negative access count", `{"uses": -1}`, `"uses"`},
		{"links not a list", `{"refs": "d1"}`, `"refs"`},
		{"empty link array", `{"refs": [[]]}`, `[0]`},
		{"object link without target", `{"refs": [{"type": "x"}]}`, `missing "target"`},
		{"scope of the wrong type", `{"scope": [1]}`, `"scope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.doc), &raw); err != nil {
				t.Fatal(err)
			}
			err := m.applyMapping(raw, &Doc{ID: "d0"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %s", err, tt.want)
			}
		})
	}
}

func TestParseQrels(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"header and graded lines", "query-id\tcorpus-id\tscore\nq\td\t3\n", ""},
		{"no header", "q\td\t1\n\n", ""},
		{"two fields", "q\td\n", "t.tsv:1: want query-id"},
		{"grade not a number", "q\td\thigh\n", "t.tsv:1: score"},
		{"grade out of range", "query-id\tcorpus-id\tscore\nq\td\t99\n", "t.tsv:2: score 99"},
		{"empty id", "q\t\t1\n", "t.tsv:1: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			into := map[string]Judgments{}
			err := parseQrels(strings.NewReader(tt.in), "t.tsv", into)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(into["q"]) != 1 {
					t.Errorf("judgments = %v", into)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one starting %q", err, tt.want)
			}
		})
	}
}

// Parsers of outside input must never panic and must keep their
// invariants whatever they are given.
func FuzzParseMapping(f *testing.F) {
	f.Add([]byte(`{"version": 1, "createdAt": "ts", "now": "2026-06-01T00:00:00Z"}`))
	f.Add([]byte(`{"version": 1, "links": "xrefs"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMapping(b, "fuzz")
		if err == nil && (m.Version != MappingVersion || m.LinkType == "") {
			t.Errorf("accepted %q as %+v", b, m)
		}
	})
}

func FuzzParseLinks(f *testing.F) {
	f.Add([]byte(`[["1", "5", "1"], ["92", "1", "1"]]`))
	f.Add([]byte(`["a", "b", "a"]`))
	f.Add([]byte(`[{"target": 3, "type": "fixes"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		links, err := parseLinks(b, "self", "cites")
		if err != nil {
			return
		}
		seen := map[Link]bool{}
		for _, l := range links {
			if l.Target == "" || l.Target == "self" || l.Type == "" || seen[l] {
				t.Fatalf("parseLinks(%q) gave %+v", b, links)
			}
			seen[l] = true
		}
	})
}

func FuzzParseQrels(f *testing.F) {
	f.Add("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
	f.Add("q\td\t-1\n")
	f.Fuzz(func(t *testing.T, s string) {
		into := map[string]Judgments{}
		if err := parseQrels(strings.NewReader(s), "fuzz", into); err != nil {
			return
		}
		for q, js := range into {
			for d, g := range js {
				if q == "" || d == "" || g < 0 || g > 10 {
					t.Fatalf("accepted %q: %q %q %d", s, q, d, g)
				}
			}
		}
	})
}
