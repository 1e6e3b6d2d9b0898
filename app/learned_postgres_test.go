package app_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
)

// replicaTakeUp bounds how long a replica may take to take up a model
// another one learned: many polls of the test's 50 ms, with room for a
// loaded machine.
const replicaTakeUp = 20 * time.Second

// fruitCorpus: 120 texts of a third topic, to grow the corpus so that a
// learning gives another model.
func fruitCorpus() []h4r.Item {
	fruit := []string{"apple", "pear", "orchard", "harvest", "juice", "blossom"}
	items := make([]h4r.Item, 0, 120)
	for i := range 120 {
		items = append(items, h4r.Item{ID: fmt.Sprintf("fruit-%d", i), Kind: "note",
			Text: fmt.Sprintf("the %s %s %s", fruit[i%6], fruit[(i+1)%6], fruit[(i+3)%6])})
	}
	return items
}

// semanticPack asks a semantic pack of forty items.
func semanticPack(t *testing.T, a *app.App, text string) *h4r.Pack {
	t.Helper()
	p, err := a.Engine.ContextPack(t.Context(), h4r.Specialist{ID: "t", SecurityLevel: h4r.Internal},
		&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QuerySemantic, Text: text}, Limit: 40, Budget: &h4r.Budget{MaxItems: 40}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// answersLike waits until replica b answers a semantic "car" from vectors
// as a does.
func answersLike(t *testing.T, a, b *app.App, when string) {
	t.Helper()
	want := semanticPack(t, a, "car")
	if st := want.Sources[h4r.GenVector]; st.Candidates == 0 {
		t.Fatalf("%s: the learning replica has no vector candidates: sources %+v", when, want.Sources)
	}
	deadline := time.Now().Add(replicaTakeUp)
	for {
		got := semanticPack(t, b, "car")
		if got.Sources[h4r.GenVector].Candidates > 0 && slices.Equal(resultIDs(got), resultIDs(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %v the other replica answers %v (vector sources %+v), the learning one %v: it did not take up the model",
				when, replicaTakeUp, resultIDs(got), got.Sources[h4r.GenVector], resultIDs(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openReplica opens one replica over cfg's store that polls the saved
// model's name every poll and checks for drift every check, and closes it
// at the end of the test.
func openReplica(t *testing.T, cfg config.Config, poll, check time.Duration) *app.App {
	t.Helper()
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quiet), app.WithLearnedTimings(poll, check))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// Two replicas over one Postgres database: when one learns the model (the
// first time, then again over a grown corpus), the other takes it up
// without a restart and answers from the same vectors, and a write through
// it gets a vector of the new model.
func TestLearnedModelAcrossPostgresReplicas(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = postgresURL(t)
	cfg.Embedder = "learned"
	cfg.VectorCandidates = 40
	cfg.EmbedLearnedDim = 2
	cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
	a, b := openReplica(t, cfg, 50*time.Millisecond, time.Hour), openReplica(t, cfg, 50*time.Millisecond, time.Hour)
	ingest(t, a, motorCorpus())
	if _, err := a.LearnEmbedder(t.Context()); err != nil {
		t.Fatal(err)
	}
	answersLike(t, a, b, "first learning")

	ingest(t, a, fruitCorpus())
	if n, err := a.LearnEmbedder(t.Context()); err != nil || n != 240 {
		t.Fatalf("LearnEmbedder over the grown corpus = %d, %v; want 240", n, err)
	}
	answersLike(t, a, b, "learning again")

	ingest(t, b, []h4r.Item{{ID: "car-late", Kind: "note", Text: "the car engine garage"}})
	deadline := time.Now().Add(replicaTakeUp)
	for {
		n, err := a.VectorCount(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 241 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vectors of the current model = %d; want 241 (the write through the other replica too)", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two replicas over one Postgres database learn the model one at a time:
// while one holds the learning lock, the other's drift check learns
// nothing; once it is free the other learns, and the first then takes up
// that model under the lock instead of learning the corpus a second time.
func TestOneReplicaLearnsAtATime(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = postgresURL(t)
	cfg.Embedder = "learned"
	cfg.EmbedLearnedDim = 2
	cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
	// No poll or check of their own during the test: each step below is
	// the check, run by hand.
	a, b := openReplica(t, cfg, time.Hour, time.Hour), openReplica(t, cfg, time.Hour, time.Hour)
	ingest(t, a, append(motorCorpus(), fruitCorpus()...))
	unlearned := b.LearnedModelName()

	unlock, ok, err := a.LockLearning(t.Context())
	if err != nil || !ok {
		t.Fatalf("taking the free learning lock: ok %v, %v", ok, err)
	}
	var once sync.Once
	release := func() { once.Do(unlock) }
	t.Cleanup(release) // before the replicas close: a held lock keeps its connection
	if _, ok, err := b.LockLearning(t.Context()); err != nil || ok {
		t.Fatalf("the other replica took the lock while it was held: ok %v, %v", ok, err)
	}
	if learned, err := b.CheckLearned(t.Context()); err != nil || learned {
		t.Fatalf("drift check while another replica learns = %v, %v; want no learning", learned, err)
	}
	if name := b.LearnedModelName(); name != unlearned {
		t.Fatalf("the replica holds model %q after a check that should have learned nothing", name)
	}
	release()

	if learned, err := b.CheckLearned(t.Context()); err != nil || !learned {
		t.Fatalf("drift check with the lock free = %v, %v; want a learning", learned, err)
	}
	learnedByB := b.LearnedModelName()
	if learnedByB == unlearned {
		t.Fatal("the replica reports a learning but holds no model")
	}
	if learned, err := a.CheckLearned(t.Context()); err != nil || learned {
		t.Fatalf("drift check after the other replica learned = %v, %v; want its model taken up, not a second learning", learned, err)
	}
	if got := a.LearnedModelName(); got != learnedByB {
		t.Fatalf("replica holds model %q, the one learned is %q", got, learnedByB)
	}
}
