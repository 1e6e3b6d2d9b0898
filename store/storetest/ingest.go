package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

func (s *suite) testIngest(t *testing.T) {
	created := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		item h4r.Item
	}{
		{"minimal item gets createdAt", h4r.Item{ID: "m1", Text: "hello"}},
		{"full item", h4r.Item{
			ID:   "mem-001",
			Kind: "test_failure",
			Text: "login-spec-001 failed: element #login-button not found",
			Content: map[string]any{
				"test": "login-spec-001", "selector": "#login-button",
				"personalData": map[string]any{"email": "a@b.c"}, "attempts": []any{1.0, 2.0},
			},
			Metadata: h4r.Metadata{
				CreatedAt:  created,
				Importance: ptr(0.7), Trust: ptr(0.9), Sensitivity: ptr(0.2), Novelty: ptr(0.1),
				ContainsPII: true, PIIFields: []string{"$.content.personalData"},
				RestrictedToGroups: []string{"qa"},
				Tags:               []string{"selector", "login"},
				Source:             "playwright",
				Extra:              map[string]any{"test_type": "e2e", "status": "failed", "retries": 3.0, "flaky": false},
			},
			Links: []h4r.Link{
				{Type: "caused_by", Target: "mem-000", Strength: 0.5},
				{Type: "similar_to", Target: "mem-002", Strength: 1},
			},
		}},
		{"link strength defaults to 1", h4r.Item{
			ID: "l1", Text: "links", Metadata: h4r.Metadata{CreatedAt: created},
			Links: []h4r.Link{{Type: "fixes", Target: "x"}, {Type: "fixes", Target: "x"}},
		}},
		{"tags are de-duplicated", h4r.Item{
			ID: "t1", Text: "tags", Metadata: h4r.Metadata{CreatedAt: created, Tags: []string{"b", "a", "b"}},
		}},
		{"createdAt in another zone is kept as the same instant", h4r.Item{
			ID: "z1", Text: "zone", Metadata: h4r.Metadata{CreatedAt: time.Date(2026, 11, 20, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))},
		}},
		{"unicode text and id", h4r.Item{
			ID: "ümlaut-✓", Text: "Ünïcödé tëxt with emoji 🔥 and 日本語", Metadata: h4r.Metadata{CreatedAt: created},
		}},
		{"empty content object", h4r.Item{
			ID: "c1", Text: "content", Content: map[string]any{}, Metadata: h4r.Metadata{CreatedAt: created},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.open(t)
			in := tt.item
			inputBefore, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.Upsert(t.Context(), []h4r.Item{in})
			if err != nil {
				t.Fatalf("Upsert: %v", err)
			}
			if inputAfter, _ := json.Marshal(in); string(inputAfter) != string(inputBefore) {
				t.Errorf("Upsert changed the caller's item:\n%s\nwas\n%s", inputAfter, inputBefore)
			}
			if !slices.Equal(got, []string{in.ID}) {
				t.Fatalf("Upsert returned ids %q, want %q", got, in.ID)
			}
			item := get(t, st, in.ID)

			want := in
			want.Links = slices.Clone(in.Links)
			want.Normalize(item.Metadata.CreatedAt) // fills createdAt only when the input has none
			if in.Metadata.CreatedAt.IsZero() && item.Metadata.CreatedAt.IsZero() {
				t.Error("createdAt was not filled in")
			}
			if g, w := canonical(t, item), canonical(t, &want); g != w {
				t.Errorf("Get returned\n%s\nwant\n%s", g, w)
			}

			delivered, err := want.Delivered().Encode()
			if err != nil {
				t.Fatal(err)
			}
			m := item.Metadata
			if m.Version != 1 {
				t.Errorf("version = %d, want 1", m.Version)
			}
			if m.AccessCount != 0 || !m.LastAccessedAt.IsZero() {
				t.Errorf("accessCount = %d, lastAccessedAt = %v; want 0 and unset", m.AccessCount, m.LastAccessedAt)
			}
			if m.UpdatedAt.IsZero() {
				t.Error("updatedAt is not set")
			}
			if m.ByteSize != len(delivered) {
				t.Errorf("byteSize = %d, want %d (the delivered JSON)", m.ByteSize, len(delivered))
			}
			if w := s.counter.Count(string(delivered)); m.Tokens != w {
				t.Errorf("tokens = %d, want %d (cl100k_base count of the delivered JSON)", m.Tokens, w)
			}
		})
	}
}

func (s *suite) testReplace(t *testing.T) {
	// With reopen, accesses recorded before the replace are flushed by
	// Close, and the replace must keep them.
	var (
		st     Store
		reopen func(t *testing.T) Store
	)
	if s.newPlace != nil {
		reopen = s.newPlace(t)
		st = reopen(t)
	} else {
		st = s.open(t)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v1 := h4r.Item{ID: "r", Kind: "note", Text: "original wording alpha",
		Metadata: h4r.Metadata{CreatedAt: created, Tags: []string{"old"}},
		Links:    []h4r.Link{{Type: "caused_by", Target: "x"}}}
	upsert(t, st, textItem("x", "target of the first version"), v1)
	first := get(t, st, "r")

	wantAccess := int64(0)
	if reopen != nil {
		st.RecordAccess([]string{"r", "r"})
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		st = reopen(t)
		wantAccess = 2
	}

	v2 := h4r.Item{ID: "r", Kind: "fix", Text: "revised wording beta",
		Metadata: h4r.Metadata{CreatedAt: created, Tags: []string{"new"}}}
	upsert(t, st, v2)
	second := get(t, st, "r")

	t.Run("version goes up and fields are replaced", func(t *testing.T) {
		if second.Metadata.Version != 2 {
			t.Errorf("version = %d, want 2", second.Metadata.Version)
		}
		if second.Text != v2.Text || second.Kind != v2.Kind || len(second.Links) != 0 {
			t.Errorf("got text %q kind %q links %v, want the second version's", second.Text, second.Kind, second.Links)
		}
		if second.Metadata.UpdatedAt.Before(first.Metadata.UpdatedAt) {
			t.Errorf("updatedAt went back from %v to %v", first.Metadata.UpdatedAt, second.Metadata.UpdatedAt)
		}
	})
	t.Run("access count is kept", func(t *testing.T) {
		if reopen == nil {
			t.Skip("needs storetest.WithReopen to flush access counts")
		}
		if second.Metadata.AccessCount != wantAccess {
			t.Errorf("accessCount = %d, want %d", second.Metadata.AccessCount, wantAccess)
		}
	})
	t.Run("full-text index follows the text", func(t *testing.T) {
		if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "alpha original"}); len(hits) != 0 {
			t.Errorf("old text still found: %v", hitIDs(hits))
		}
		if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "beta"}); !slices.Equal(hitIDs(hits), []string{"r"}) {
			t.Errorf("new text: got %v, want [r]", hitIDs(hits))
		}
	})
	t.Run("old tags and links are gone", func(t *testing.T) {
		for _, tt := range []struct {
			tag  string
			want []string
		}{{"old", nil}, {"new", []string{"r"}}} {
			hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "wording", Filters: h4r.Filters{Tags: []string{tt.tag}}})
			if got := hitIDs(hits); !slices.Equal(got, tt.want) {
				t.Errorf("tag %q: got %v, want %v", tt.tag, got, tt.want)
			}
		}
		hits := generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"x"}})
		if got := hitIDs(hits); !slices.Equal(got, []string{"x"}) {
			t.Errorf("hops from x: got %v, want only x (r no longer links to it)", got)
		}
	})
	t.Run("replacing with the same text", func(t *testing.T) {
		upsert(t, st, v2)
		third := get(t, st, "r")
		if third.Metadata.Version != 3 {
			t.Errorf("version = %d, want 3", third.Metadata.Version)
		}
		if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "beta"}); !slices.Equal(hitIDs(hits), []string{"r"}) {
			t.Errorf("got %v, want [r] once", hitIDs(hits))
		}
		if n := count(t, st); n != 2 {
			t.Errorf("Count = %d, want 2", n)
		}
	})
}

func (s *suite) testBatchAtomicity(t *testing.T) {
	good := func(id string) h4r.Item { return textItem(id, "new item "+id) }
	replacement := textItem("keep", "replaced text that must not land")
	tests := []struct {
		name      string
		batch     []h4r.Item
		wantField string
	}{
		{"empty id in the middle", []h4r.Item{good("n1"), {ID: "", Text: "x"}, good("n2")}, "items[1].id"},
		{"missing text", []h4r.Item{replacement, {ID: "n1", Text: "  "}, good("n2")}, "items[1].text"},
		{"trust out of range at the end", []h4r.Item{replacement, good("n1"),
			{ID: "n2", Text: "x", Metadata: h4r.Metadata{Trust: ptr(1.5)}}}, "items[2].metadata.trust"},
		{"bad link strength", []h4r.Item{good("n1"),
			{ID: "n2", Text: "x", Links: []h4r.Link{{Type: "fixes", Target: "keep", Strength: 2}}}, good("n3")}, "items[1].links[0].strength"},
		{"link without target", []h4r.Item{good("n1"), good("n2"),
			{ID: "n3", Text: "x", Links: []h4r.Link{{Type: "fixes"}}}}, "items[2].links[0].target"},
		{"item over the size limit", []h4r.Item{replacement,
			{ID: "n1", Text: "big", Content: map[string]any{"blob": strings.Repeat("x", h4r.MaxItemBytes)}}}, "items[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.open(t)
			upsert(t, st, textItem("keep", "kept text"))
			_, err := st.Upsert(t.Context(), tt.batch)
			wantError(t, err, h4r.EINVALID, tt.wantField)

			if n := count(t, st); n != 1 {
				t.Errorf("Count = %d after a rejected batch, want 1", n)
			}
			kept := get(t, st, "keep")
			if kept.Text != "kept text" || kept.Metadata.Version != 1 {
				t.Errorf("existing item changed: text %q version %d", kept.Text, kept.Metadata.Version)
			}
			for _, it := range tt.batch {
				if it.ID == "" || it.ID == "keep" {
					continue
				}
				if _, err := st.Get(t.Context(), it.ID); h4r.ErrorCode(err) != h4r.ENOTFOUND {
					t.Errorf("Get(%q) after a rejected batch: %v, want not_found", it.ID, err)
				}
			}
			if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "new replaced"}); len(hits) != 0 {
				t.Errorf("rejected batch is searchable: %v", hitIDs(hits))
			}
		})
	}
}

func (s *suite) testDuplicateIDs(t *testing.T) {
	st := s.open(t)
	batch := []h4r.Item{textItem("a", "first"), textItem("b", "other"), textItem("a", "second"), textItem("a", "third")}
	got, err := st.Upsert(t.Context(), batch)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if want := []string{"a", "b", "a", "a"}; !slices.Equal(got, want) {
		t.Errorf("ids = %q, want %q (input order)", got, want)
	}
	a := get(t, st, "a")
	if a.Text != "third" || a.Metadata.Version != 3 {
		t.Errorf("a: text %q version %d, want the last one (third) at version 3", a.Text, a.Metadata.Version)
	}
	if n := count(t, st); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
	if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "first second"}); len(hits) != 0 {
		t.Errorf("earlier texts still indexed: %v", hitIDs(hits))
	}
}

func (s *suite) testNotFound(t *testing.T) {
	st := s.open(t)
	upsert(t, st, textItem("present", "here"))
	tests := []struct {
		name      string
		op        func(st Store) error
		wantCode  string
		wantField string
	}{
		{"get missing", func(st Store) error { _, err := st.Get(t.Context(), "absent"); return err }, h4r.ENOTFOUND, ""},
		{"delete missing", func(st Store) error { return st.Delete(t.Context(), "absent") }, h4r.ENOTFOUND, ""},
		{"get is case sensitive", func(st Store) error { _, err := st.Get(t.Context(), "PRESENT"); return err }, h4r.ENOTFOUND, ""},
		{"get empty id", func(st Store) error { _, err := st.Get(t.Context(), ""); return err }, h4r.EINVALID, "id"},
		{"delete empty id", func(st Store) error { return st.Delete(t.Context(), "") }, h4r.EINVALID, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, tt.op(st), tt.wantCode, tt.wantField)
		})
	}
	if n := count(t, st); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func (s *suite) testDelete(t *testing.T) {
	st := s.open(t)
	// b → a → c: a is held and holds a link.
	upsert(t, st,
		h4r.Item{ID: "a", Kind: "event", Text: "doomed item", Metadata: h4r.Metadata{Tags: []string{"t"}},
			Links: []h4r.Link{{Type: "caused_by", Target: "c"}}},
		h4r.Item{ID: "b", Kind: "event", Text: "survivor one", Links: []h4r.Link{{Type: "caused_by", Target: "a"}}},
		textItem("c", "survivor two"))
	if err := st.Delete(t.Context(), "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"get is not found", func(t *testing.T) {
			_, err := st.Get(t.Context(), "a")
			wantError(t, err, h4r.ENOTFOUND, "")
		}},
		{"count drops", func(t *testing.T) {
			if n := count(t, st); n != 2 {
				t.Errorf("Count = %d, want 2", n)
			}
		}},
		{"not searchable", func(t *testing.T) {
			if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "doomed"}); len(hits) != 0 {
				t.Errorf("deleted item found: %v", hitIDs(hits))
			}
		}},
		{"hops neither reach nor pass it", func(t *testing.T) {
			hits := generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"b"}, MaxHops: 5})
			if got := hitIDs(hits); !slices.Equal(got, []string{"b"}) {
				t.Errorf("hops from b: %v, want [b]", got)
			}
		}},
		{"the link to it stays", func(t *testing.T) {
			if b := get(t, st, "b"); len(b.Links) != 1 || b.Links[0].Target != "a" {
				t.Errorf("b's links = %v, want its link to a", b.Links)
			}
		}},
		{"deleting again is not found", func(t *testing.T) {
			wantError(t, st.Delete(t.Context(), "a"), h4r.ENOTFOUND, "")
		}},
		{"re-ingesting continues the version, never reusing one", func(t *testing.T) {
			// Caches key policy decisions on (id, version): a version reused
			// after a delete would give the deleted item's decision to a new
			// item under the same id, here a more sensitive one.
			sensitive := 0.95
			reborn := textItem("a", "reborn")
			reborn.Metadata.Sensitivity, reborn.Metadata.HasCredentials = &sensitive, true
			upsert(t, st, reborn)
			if v := get(t, st, "a").Metadata.Version; v != 2 {
				t.Errorf("version = %d, want 2 (version 1 was the deleted item's)", v)
			}
			if err := st.Delete(t.Context(), "a"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			upsert(t, st, textItem("a", "reborn"))
			if v := get(t, st, "a").Metadata.Version; v != 3 {
				t.Errorf("after a second delete, version = %d, want 3", v)
			}
			hits := generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"b"}, MaxHops: 5})
			if got := hitIDs(hits); !slices.Equal(got, []string{"b", "a"}) {
				t.Errorf("hops from b: %v, want [b a] (b's link reaches the new a)", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
