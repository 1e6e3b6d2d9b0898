package app

import (
	"context"
	"errors"
	"log/slog"
	"testing"
)

// warmedStore records WarmGraph calls.
type warmedStore struct {
	Store
	warmed chan struct{}
	err    error
}

func (s *warmedStore) WarmGraph(context.Context) error {
	close(s.warmed)
	return s.err
}

// wrapper stands for the mirrors' store wrappers.
type wrapper struct{ Store }

func (w wrapper) Unwrap() Store { return w.Store }

func TestWarmGraphFindsTheStoreUnderWrappers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(*warmedStore) Store
	}{
		{"bare", func(s *warmedStore) Store { return s }},
		{"wrapped twice", func(s *warmedStore) Store { return wrapper{wrapper{s}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &warmedStore{warmed: make(chan struct{}), err: errors.New("disk gone")}
			a := &App{}
			warmGraph(a, tc.store(s), slog.New(slog.DiscardHandler))
			<-s.warmed
			if len(a.closers) != 1 || a.closers[0]() != nil {
				t.Errorf("closers %d: want one that waits for the warm-up and returns nil (a failed warm-up is logged)", len(a.closers))
			}
		})
	}
	a := &App{}
	warmGraph(a, wrapper{nil}, slog.New(slog.DiscardHandler))
	if len(a.closers) != 0 {
		t.Error("a store without an in-memory graph got a warm-up")
	}
}
