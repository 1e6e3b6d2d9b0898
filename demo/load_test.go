package demo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/demo"
)

// memStore is an in-memory demo.Upserter: it keeps items by id, as a store
// does, and can be told to fail.
type memStore struct {
	items     map[string]h4r.Item
	upserts   int // calls to Upsert that stored something
	countErr  error
	upsertErr error
}

func (m *memStore) Upsert(ctx context.Context, items []h4r.Item) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.upsertErr != nil {
		return nil, m.upsertErr
	}
	ids := make([]string, len(items))
	for i, it := range items {
		if err := it.Validate(""); err != nil {
			return nil, err
		}
		m.items[it.ID] = it
		ids[i] = it.ID
	}
	m.upserts++
	return ids, nil
}

func (m *memStore) Count(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return len(m.items), m.countErr
}

func TestLoadIfEmpty(t *testing.T) {
	corpus, err := demo.Items()
	if err != nil {
		t.Fatal(err)
	}
	errCount := errors.New("database is locked")
	errUpsert := errors.New("disk full")
	own := h4r.Item{ID: "mine", Text: "an item of the user's own", Metadata: h4r.Metadata{}}
	tests := []struct {
		name        string
		seed        []h4r.Item
		countErr    error
		upsertErr   error
		cancel      bool
		calls       int
		wantLoaded  int // from the last call
		wantErr     error
		wantUpserts int
		wantItems   int
	}{
		{name: "empty store gets the corpus", calls: 1, wantLoaded: len(corpus), wantUpserts: 1, wantItems: len(corpus)},
		{name: "second start loads nothing", calls: 2, wantLoaded: 0, wantUpserts: 1, wantItems: len(corpus)},
		{name: "a store with the user's items is left alone", seed: []h4r.Item{own}, calls: 1, wantItems: 1},
		{name: "count failure stops the load", countErr: errCount, calls: 1, wantErr: errCount},
		{name: "upsert failure is reported", upsertErr: errUpsert, calls: 1, wantErr: errUpsert},
		{name: "cancelled context", cancel: true, calls: 1, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{items: map[string]h4r.Item{}, countErr: tt.countErr, upsertErr: tt.upsertErr}
			for _, it := range tt.seed {
				store.items[it.ID] = it
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			var loaded int
			var err error
			for range tt.calls {
				loaded, err = demo.LoadIfEmpty(ctx, store)
			}
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("LoadIfEmpty error = %v, want %v", err, tt.wantErr)
			}
			if loaded != tt.wantLoaded {
				t.Errorf("loaded = %d, want %d", loaded, tt.wantLoaded)
			}
			if store.upserts != tt.wantUpserts {
				t.Errorf("Upsert stored %d times, want %d", store.upserts, tt.wantUpserts)
			}
			if len(store.items) != tt.wantItems {
				t.Errorf("store holds %d items, want %d", len(store.items), tt.wantItems)
			}
			if tt.wantItems == len(corpus) {
				for _, it := range corpus {
					if _, ok := store.items[it.ID]; !ok {
						t.Errorf("corpus item %s was not loaded", it.ID)
					}
				}
			}
		})
	}
}

func BenchmarkItems(b *testing.B) {
	for b.Loop() {
		if _, err := demo.Items(); err != nil {
			b.Fatal(err)
		}
	}
}
