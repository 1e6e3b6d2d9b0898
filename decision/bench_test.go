package decision_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// benchDecisions is the scale the targets are set at: 100k decisions
// (H4R_BENCH_DECISIONS overrides it for a quick run).
func benchDecisions() int {
	if n, err := strconv.Atoi(os.Getenv("H4R_BENCH_DECISIONS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkPrecedentQueries measures the precedent queries over a SQLite
// store of benchDecisions() decision traces: each cites one of n/100 epics
// (so ~100 decisions per epic, of which a query returns 10), one in five is
// a file assignment of one of n/50 files (~10 per file), with an outcome
// event each. Every answer passes the bundled OPA policy. Targets
// (docs/decisions.md): precedent < 100 ms, file history < 50 ms, full
// context < 200 ms.
func BenchmarkPrecedentQueries(b *testing.B) {
	ctx := context.Background()
	n := benchDecisions()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "h4r.db"), sqlite.WithTokenCounter(counter), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pol, err := policy.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	svc := decision.New(st, scs.New(pol, counter))
	epics, files := max(n/100, 1), max(n/50, 1)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]h4r.Item, 0, 1000)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := st.Upsert(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		p, err := decision.Prepare(decision.Trace{ID: fmt.Sprintf("dt-%07d", i), DecisionType: decision.TypeDecompositionStrategy,
			EpicID: fmt.Sprintf("mj%d", i), AgentName: "coordinator", ProjectKey: "/repo",
			Decision:       []byte(`{"strategy":"file-based"}`),
			Rationale:      "feature-based failed on similar tasks",
			Alternatives:   []byte(`[{"option":"feature-based","rejected_because":"70% failure rate"}]`),
			PrecedentCited: []byte(fmt.Sprintf(`[{"epic_id":"ep%d","reason":"same shape"}]`, i%epics)),
			Timestamp:      decision.Time{Time: base.Add(time.Duration(i) * time.Minute)}}, "", base)
		if err != nil {
			b.Fatal(err)
		}
		if i%5 == 0 {
			p.Trace.DecisionType = decision.TypeFileAssignment
			p.Trace.Decision = []byte(fmt.Sprintf(`{"files":["src/f%d.ts"],"assigned_to":"w%d"}`, (i/5)%files, i%7))
		}
		it, err := p.Item()
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, it)
		if i%5 == 0 {
			ok := i%3 != 0
			ev, err := decision.Event{ID: fmt.Sprintf("ev-%07d", i), Type: "subtask_outcome", DecisionID: it.ID, Success: &ok,
				Timestamp: decision.Time{Time: base.Add(time.Duration(i)*time.Minute + time.Second)}}.Item()
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, ev)
		}
		if len(batch) >= 1000 {
			flush()
		}
	}
	flush()
	spec := h4r.Anonymous()
	b.Run("precedent", func(b *testing.B) {
		i := 0
		for b.Loop() {
			a, err := svc.Citing(ctx, spec, fmt.Sprintf("ep%d", i%epics), 10)
			if err != nil || len(a.DecisionTraces) != min(10, n/epics) {
				b.Fatalf("%v, %d decisions", err, len(a.DecisionTraces))
			}
			i++
		}
	})
	b.Run("file_history", func(b *testing.B) {
		i := 0
		for b.Loop() {
			a, err := svc.FileHistory(ctx, spec, fmt.Sprintf("src/f%d.ts", i%files), 50)
			if err != nil || len(a.DecisionTraces) == 0 {
				b.Fatalf("%v, %d decisions", err, len(a.DecisionTraces))
			}
			i++
		}
	})
	b.Run("full_context", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := svc.Get(ctx, spec, fmt.Sprintf("dt-%07d", (i*5)%n)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
