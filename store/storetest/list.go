package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// testList checks Find without a link match, the read by filter alone:
// newest first (created_at, then id, descending), the limit, every filter
// of the full-text generator, and a bad filter refused as
// invalid_argument.
func (s *suite) testList(t *testing.T) {
	ctx := context.Background()
	st := s.open(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(minutes int) h4r.Metadata {
		return h4r.Metadata{CreatedAt: base.Add(time.Duration(minutes) * time.Minute)}
	}
	items := []h4r.Item{
		{ID: "m-old", Kind: "memory", Text: "an old note", Metadata: withExtra(at(0), map[string]any{"session_id": "s1"})},
		{ID: "m-new", Kind: "memory", Text: "a new note", Metadata: withExtra(at(10), map[string]any{"session_id": "s1"})},
		// The same time as m-new: the id breaks the tie, descending.
		{ID: "m-tie", Kind: "memory", Text: "a tied note", Metadata: withExtra(at(10), map[string]any{"session_id": "s1"})},
		{ID: "m-other", Kind: "memory", Text: "another session", Metadata: withExtra(at(20), map[string]any{"session_id": "s2"})},
		{ID: "doc", Kind: "document", Text: "not a memory", Metadata: at(30)},
	}
	items[1].Metadata.Tags = []string{"fix"}
	items[2].Metadata.Tags = []string{"fix", "login"}
	upsert(t, st, items...)

	tests := []struct {
		name    string
		filters h4r.Filters
		limit   int
		want    []string
	}{
		{"everything, newest first", h4r.Filters{}, 10, []string{"doc", "m-other", "m-tie", "m-new", "m-old"}},
		{"the limit keeps the newest", h4r.Filters{}, 2, []string{"doc", "m-other"}},
		{"one kind", h4r.Filters{Kinds: []string{"memory"}}, 10, []string{"m-other", "m-tie", "m-new", "m-old"}},
		{"kind and metadata", h4r.Filters{Kinds: []string{"memory"}, Metadata: map[string]any{"session_id": "s1"}}, 10, []string{"m-tie", "m-new", "m-old"}},
		{"all tags required", h4r.Filters{Tags: []string{"fix", "login"}}, 10, []string{"m-tie"}},
		{"any tag, newest first", h4r.Filters{AnyTags: []string{"login", "fix"}}, 10, []string{"m-tie", "m-new"}},
		{"created range", h4r.Filters{CreatedAfter: base.Add(time.Minute), CreatedBefore: base.Add(20 * time.Minute)}, 10, []string{"m-tie", "m-new"}},
		{"nothing matches", h4r.Filters{Metadata: map[string]any{"session_id": "s3"}}, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.Find(ctx, h4r.ItemQuery{Filters: tt.filters, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, it := range got {
				ids = append(ids, it.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("Find = %v, want %v", ids, tt.want)
			}
		})
	}
	t.Run("stored fields", func(t *testing.T) {
		got, err := st.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Tags: []string{"login"}}, Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("Find: %v, %d items", err, len(got))
		}
		it := got[0]
		if it.Text != "a tied note" || it.Metadata.Version != 1 || it.Metadata.Tokens == 0 ||
			!it.Metadata.CreatedAt.Equal(base.Add(10*time.Minute)) || it.Metadata.Extra["session_id"] != "s1" {
			t.Errorf("listed item %+v: stored fields missing", it)
		}
	})
	bad := []struct {
		name    string
		filters h4r.Filters
		limit   int
		field   string
	}{
		{"negative limit", h4r.Filters{}, -1, "limit"},
		{"bad metadata key", h4r.Filters{Metadata: map[string]any{"bad key": "x"}}, 10, "filters.bad key"},
		{"bad metadata value", h4r.Filters{Metadata: map[string]any{"k": []string{"x"}}}, 10, "filters.k"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := st.Find(ctx, h4r.ItemQuery{Filters: tt.filters, Limit: tt.limit})
			if h4r.ErrorCode(err) != h4r.EINVALID || fieldOf(err) != tt.field {
				t.Errorf("Find error %v (field %q), want invalid_argument naming %q", err, fieldOf(err), tt.field)
			}
		})
	}
}

func withExtra(m h4r.Metadata, extra map[string]any) h4r.Metadata {
	m.Extra = extra
	return m
}

func fieldOf(err error) string {
	if e, ok := errors.AsType[*h4r.Error](err); ok {
		return e.Field
	}
	return fmt.Sprint(err)
}
