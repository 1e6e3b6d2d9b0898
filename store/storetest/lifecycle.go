package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r"
)

func (s *suite) testAccessCounts(t *testing.T) {
	reopen := s.reopenable(t)
	st := reopen(t)
	upsert(t, st, textItem("a", "alpha one"), textItem("b", "alpha two"), textItem("c", "alpha three"))
	st.RecordAccess([]string{"a", "a", "b", "ghost"})
	st.RecordAccess(nil)
	st.RecordAccess([]string{"a"})
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st.RecordAccess([]string{"a"}) // after Close: ignored, and no panic
	st = reopen(t)

	tests := []struct {
		id       string
		want     int64
		accessed bool
	}{
		{"a", 3, true},
		{"b", 1, true},
		{"c", 0, false},
	}
	hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "alpha"})
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			m := get(t, st, tt.id).Metadata
			if m.AccessCount != tt.want {
				t.Errorf("Get: accessCount = %d, want %d", m.AccessCount, tt.want)
			}
			if m.LastAccessedAt.IsZero() == tt.accessed {
				t.Errorf("lastAccessedAt = %v, want it set: %v", m.LastAccessedAt, tt.accessed)
			}
			i := slices.IndexFunc(hits, func(h h4r.Hit) bool { return h.Item.ID == tt.id })
			if i < 0 {
				t.Fatalf("full text did not find %s", tt.id)
			}
			if got := hits[i].Item.Metadata.AccessCount; got != tt.want {
				t.Errorf("full-text hit: accessCount = %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("unknown ids are harmless", func(t *testing.T) {
		if n := count(t, st); n != 3 {
			t.Errorf("Count = %d, want 3", n)
		}
		_, err := st.Get(t.Context(), "ghost")
		wantError(t, err, h4r.ENOTFOUND, "")
	})
}

func (s *suite) testPersistence(t *testing.T) {
	reopen := s.reopenable(t)
	st := reopen(t)
	items := HopCases()[0].Items()
	items[0].Content = map[string]any{"k": "v"}
	items[0].Metadata.Extra = map[string]any{"status": "failed"}
	upsert(t, st, items...)
	before := map[string]string{}
	for _, it := range items {
		before[it.ID] = canonical(t, get(t, st, it.ID))
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	st = reopen(t)

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"count", func(t *testing.T) {
			if n := count(t, st); n != len(items) {
				t.Errorf("Count = %d, want %d", n, len(items))
			}
		}},
		{"items", func(t *testing.T) {
			for id, want := range before {
				if got := canonical(t, get(t, st, id)); got != want {
					t.Errorf("%s after reopen:\n%s\nwant\n%s", id, got, want)
				}
			}
		}},
		{"full text", func(t *testing.T) {
			if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "node"}); len(hits) != len(items) {
				t.Errorf("got %d hits, want %d", len(hits), len(items))
			}
		}},
		{"hops", func(t *testing.T) {
			if hits := generate(t, st.Graph(), HopCases()[0].Query()); len(hits) != len(HopCases()[0].Want) {
				t.Errorf("got %v, want %v", hitIDs(hits), HopCases()[0].Want)
			}
		}},
		{"metadata filter", func(t *testing.T) {
			hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "node", Filters: h4r.Filters{Metadata: map[string]any{"status": "failed"}}})
			if got := hitIDs(hits); !slices.Equal(got, []string{items[0].ID}) {
				t.Errorf("got %v, want [%s]", got, items[0].ID)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// testConcurrentWriters upserts from several goroutines while others
// search, and checks that every write landed.
func (s *suite) testConcurrentWriters(t *testing.T) {
	const (
		writers = 4
		batches = 10
		perItem = 5
	)
	st := s.open(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				batch := make([]h4r.Item, perItem)
				for i := range batch {
					id := fmt.Sprintf("w%d-b%d-i%d", w, b, i)
					batch[i] = h4r.Item{ID: id, Kind: "event", Text: "concurrent write " + id,
						Links: []h4r.Link{{Type: "follows", Target: fmt.Sprintf("w%d-b%d-i0", w, b)}}}
				}
				if _, err := st.Upsert(t.Context(), batch); err != nil {
					fail(fmt.Errorf("writer %d batch %d: %w", w, b, err))
				}
			}
		})
		wg.Go(func() {
			for range batches {
				if _, err := st.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "concurrent"}); err != nil {
					fail(fmt.Errorf("reader %d: %w", w, err))
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	want := writers * batches * perItem
	if n := count(t, st); n != want {
		t.Errorf("Count = %d, want %d", n, want)
	}
	hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "concurrent", Limit: want + 10})
	if len(hits) != want {
		t.Errorf("full text found %d, want %d", len(hits), want)
	}
	for w := range writers {
		id := fmt.Sprintf("w%d-b%d-i%d", w, batches-1, perItem-1)
		if it := get(t, st, id); it.Metadata.Version != 1 || len(it.Links) != 1 {
			t.Errorf("%s: version %d, links %v", id, it.Metadata.Version, it.Links)
		}
	}
}
