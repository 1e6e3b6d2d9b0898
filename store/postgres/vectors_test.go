package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

// replicaDelay is the delay the two-replica test allows between a write on
// one replica and its effect on another's vector search: four poll
// intervals of the test's 100 ms, with room for a loaded machine.
const replicaDelay = 3 * time.Second

// vectorReplica opens a store over dsn with the hashing embedder and runs
// its WarmVectors (load, then poll) until the test ends.
func vectorReplica(t *testing.T, dsn string, h *embed.Hash) *Store {
	t.Helper()
	s := openAt(t, dsn, WithVectorPollInterval(100*time.Millisecond))
	s.EnableVectors(h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmVectors(ctx, h.Model()) }()
	t.Cleanup(func() { // before the store's Close, registered earlier
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WarmVectors: %v", err)
		}
	})
	return s
}

func waitReady(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(replicaDelay)
	for s.VectorsReady(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the vector index did not load within %v", replicaDelay)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func searchIDs(t *testing.T, s *Store, h *embed.Hash, text string, filters h4r.Filters) []string {
	t.Helper()
	hits, err := s.SearchVectors(t.Context(), h.Model(), h.Vector(text), filters, 10, embed.DefaultMinScore)
	if err != nil {
		t.Fatalf("SearchVectors(%q): %v", text, err)
	}
	ids := make([]string, len(hits))
	for i, hit := range hits {
		ids[i] = hit.Item.ID
	}
	return ids
}

// within polls cond until it holds or replicaDelay passes, and returns how
// long it took.
func within(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > replicaDelay {
			t.Fatalf("%s: not within %v", what, replicaDelay)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// Two replicas on one database, no Qdrant: an item ingested through one is
// found by vector search on the other within replicaDelay, a delete is seen
// the same way, and the writer finds its own write at once. A replica that
// starts later loads every vector in the background and says when it is
// ready. Scores are the exact float32 cosines.
func TestVectorsAcrossReplicas(t *testing.T) {
	h, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	dsn := newSchema(t)
	a := vectorReplica(t, dsn, h)
	b := vectorReplica(t, dsn, h)
	waitReady(t, a)
	waitReady(t, b)

	items := []h4r.Item{
		{ID: "login-flaky", Kind: "trace", Text: "the login test fails with a selector timeout on the checkout page"},
		{ID: "db-pool", Kind: "note", Text: "database connection pool exhausted under payment load"},
		{ID: "token-expiry", Kind: "decision", Text: "session token expired before the retry of the payment request"},
	}
	if _, err := a.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	query := "login selector timeout"
	if got := searchIDs(t, a, h, query, h4r.Filters{}); len(got) == 0 || got[0] != "login-flaky" {
		t.Fatalf("the writing replica finds %v, want login-flaky first at once", got)
	}
	took := within(t, "replica b finds the item written through a", func() bool {
		got := searchIDs(t, b, h, query, h4r.Filters{})
		return len(got) > 0 && got[0] == "login-flaky"
	})
	t.Logf("replica b found a's write after %v (poll 100 ms)", took)

	// Filters apply; scores are exact cosines of the stored float32 vectors.
	hits, err := b.SearchVectors(t.Context(), h.Model(), h.Vector("payment"), h4r.Filters{Kinds: []string{"note"}}, 10, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Item.ID != "db-pool" {
		t.Fatalf("filtered search on b: %v, want db-pool alone", hits)
	}
	want := float64(dot(h.Vector("payment"), h.Vector(items[1].Text)))
	if math.Abs(hits[0].Score-want) > 1e-6 {
		t.Errorf("score %v, want the exact cosine %v", hits[0].Score, want)
	}

	// A replace through b changes what a finds; a delete through a empties b.
	if _, err := b.Upsert(t.Context(), []h4r.Item{{ID: "login-flaky", Kind: "trace", Text: "graph rendering of the dashboard is slow"}}); err != nil {
		t.Fatal(err)
	}
	within(t, "replica a sees b's replace", func() bool {
		return slices.Contains(searchIDs(t, a, h, "dashboard graph rendering", h4r.Filters{}), "login-flaky")
	})
	if err := a.Delete(t.Context(), "login-flaky"); err != nil {
		t.Fatal(err)
	}
	within(t, "replica b drops the item deleted through a", func() bool {
		return !slices.Contains(searchIDs(t, b, h, "dashboard graph rendering", h4r.Filters{}), "login-flaky")
	})

	// A third replica, started now, is not ready before it loads.
	c := openAt(t, dsn)
	c.EnableVectors(h)
	if err := c.VectorsReady(t.Context()); h4r.ErrorCode(err) != h4r.EUNAVAILABLE {
		t.Errorf("before loading: VectorsReady = %v, want unavailable", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	if _, err := c.SearchVectors(ctx, h.Model(), h.Vector(query), h4r.Filters{}, 10, 0); h4r.ErrorCode(err) != h4r.EUNAVAILABLE {
		t.Errorf("search before loading: %v, want unavailable once its deadline passes", err)
	}
	cancel()
	warm, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.WarmVectors(warm, h.Model()) }()
	waitReady(t, c)
	if got := searchIDs(t, c, h, "session token expired", h4r.Filters{}); len(got) == 0 || got[0] != "token-expiry" {
		t.Errorf("the late replica finds %v, want token-expiry first", got)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("WarmVectors: %v", err)
	}
	if n, err := c.MissingVectors(t.Context(), h.Model()); err != nil || n != 0 {
		t.Errorf("MissingVectors = %d, %v; want 0", n, err)
	}
}

// Reindex embeds every item again and the other replica follows.
func TestReindexVectorsAcrossReplicas(t *testing.T) {
	h, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	dsn := newSchema(t)
	plain := openAt(t, dsn) // writes without vectors, as before this store had them
	var items []h4r.Item
	for i := range 300 {
		items = append(items, h4r.Item{ID: fmt.Sprintf("item-%03d", i), Kind: "note", Text: fmt.Sprintf("note number %d about topic%d", i, i%7)})
	}
	if _, err := plain.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	a := vectorReplica(t, dsn, h)
	b := vectorReplica(t, dsn, h)
	waitReady(t, a)
	waitReady(t, b)
	if n, _ := a.MissingVectors(t.Context(), h.Model()); n != len(items) {
		t.Fatalf("MissingVectors = %d, want %d before reindex", n, len(items))
	}
	done, err := a.ReindexVectors(t.Context(), nil)
	if err != nil || done != len(items) {
		t.Fatalf("ReindexVectors = %d, %v", done, err)
	}
	within(t, "replica b finds reindexed items", func() bool {
		return slices.Contains(searchIDs(t, b, h, "note number 42 about topic0", h4r.Filters{}), "item-042")
	})
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
