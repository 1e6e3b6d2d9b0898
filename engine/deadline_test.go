package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/scs"
)

// gatedSlicer is a slicer whose Slice waits for its gate whatever its
// context, as a stage reading through an index being loaded would.
type gatedSlicer struct {
	*scs.Slicer
	gate chan struct{}
}

func (s gatedSlicer) Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome {
	<-s.gate
	return s.Slicer.Slice(ctx, spec, items, limits)
}

// answerWithin runs the plan and fails the test unless it returns within
// limit (far past the deadline the test sets, so that load cannot fail it;
// a stage that held the request would hold it until the gate opens, which
// the test does only after).
func answerWithin(t *testing.T, e *engine.Engine, ctx context.Context, plan *h4r.Plan, limit time.Duration) (*h4r.Pack, error) {
	t.Helper()
	type answer struct {
		p   *h4r.Pack
		err error
	}
	done := make(chan answer, 1)
	go func() {
		p, err := e.Run(ctx, healer(), plan)
		done <- answer{p, err}
	}()
	select {
	case a := <-done:
		return a.p, a.err
	case <-time.After(limit):
		t.Fatalf("no answer within %s of a request with a deadline: a stuck stage held it", limit)
		return nil, nil
	}
}

// vectorFailedAlone fails the test unless the pack came back degraded,
// with the full-text hits, and its vector source says why it failed.
func vectorFailedAlone(t *testing.T, p *h4r.Pack, err error, why string) {
	t.Helper()
	switch {
	case err != nil:
		t.Fatal(err)
	case p.Status != h4r.StatusDegraded:
		t.Errorf("status %q, want degraded", p.Status)
	case len(p.Results) == 0:
		t.Errorf("no results: the full-text hits were lost with the failed vector generator")
	case !strings.Contains(p.Sources[h4r.GenVector].Error, why):
		t.Errorf("the vector generator's source says %q, want %q", p.Sources[h4r.GenVector].Error, why)
	}
}

// TestStuckGeneratorIsLeftBehind: a generator that does not return (one
// waiting for the vectors being loaded, deaf to its context) is left behind
// at its deadline; the pack comes with the other generators' hits, degraded,
// saying which one timed out.
func TestStuckGeneratorIsLeftBehind(t *testing.T) {
	a := openDemo(t)
	gen := &gatedGenerator{gate: make(chan struct{})}
	defer close(gen.gate)
	e := newEngine(t, a, 300*time.Millisecond, []h4r.Generator{gen}, engine.WithLogger(discardLogger()))
	plan, err := (&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "login selector"}}).Plan("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := answerWithin(t, e, ctx, plan, 30*time.Second)
	vectorFailedAlone(t, p, err, "timed out")
	if ctx.Err() != nil {
		t.Errorf("answered after the request deadline")
	}
}

// TestStuckStageAnswersAtTheDeadline: a stage that does not return by the
// request deadline cannot hold the request: the caller gets an empty
// degraded pack naming what was being loaded, or unavailable when it
// prefers (Plan.BusyError), soon after the deadline; the stuck pack keeps
// its slot until it returns.
func TestStuckStageAnswersAtTheDeadline(t *testing.T) {
	a := openDemo(t)
	for _, tc := range []struct {
		name      string
		busyError bool
	}{
		{"empty_degraded_pack", false},
		{"unavailable_error", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := make(chan struct{})
			opened := false
			open := func() {
				if !opened {
					opened = true
					close(gate)
				}
			}
			defer open()
			e := newEngine(t, a, patient, nil, engine.WithMaxInFlight(1), engine.WithLogger(discardLogger()),
				engine.WithSlicer(gatedSlicer{Slicer: productionSlicer(t), gate: gate}),
				engine.WithLoading(func() []string { return []string{"vector index"} }))
			plan, err := (&h4r.ContextRequest{Query: h4r.Query{Text: "login selector"}}).Plan("")
			if err != nil {
				t.Fatal(err)
			}
			plan.BusyError = tc.busyError
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			p, err := answerWithin(t, e, ctx, plan, 30*time.Second)
			if tc.busyError {
				if h4r.ErrorCode(err) != h4r.EUNAVAILABLE || p != nil || !strings.Contains(err.Error(), "vector index") {
					t.Fatalf("got pack %v, error %v; want unavailable naming the vector index", p, err)
				}
			} else {
				switch {
				case err != nil:
					t.Fatal(err)
				case p.Status != h4r.StatusDegraded || len(p.Results) != 0 || p.Results == nil:
					t.Errorf("status %q with %d results (nil: %v), want degraded and empty", p.Status, len(p.Results), p.Results == nil)
				case !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "loading its in-memory vector index") }):
					t.Errorf("warnings %v do not say the vector index was loading", p.Explainability.Warnings)
				}
			}
			if got := e.InFlight(); got != 1 {
				t.Errorf("InFlight %d while the stuck pack runs, want 1: it must keep its slot", got)
			}
			open()
			for e.InFlight() != 0 {
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestLoadingAnswersUnavailableWhenPreferred: a pack left empty because its
// generators waited for indexes being loaded is, for a caller that prefers
// an error (Plan.BusyError), unavailable naming them; without the
// preference it is the empty degraded pack.
func TestLoadingAnswersUnavailableWhenPreferred(t *testing.T) {
	gen := &gatedGenerator{gate: make(chan struct{})}
	defer close(gen.gate)
	cfg := testConfig(t)
	e, err := engine.New(engine.WithTextGenerators(gen), engine.WithSlicer(productionSlicer(t)), engine.WithLogger(discardLogger()),
		engine.WithSettings(engine.Settings{
			Weights: cfg.Weights, Budget: scs.Limits{MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault},
			GeneratorTimeout: 200 * time.Millisecond,
		}),
		engine.WithLoading(func() []string { return []string{"full-text index"} }))
	if err != nil {
		t.Fatal(err)
	}
	for _, busyError := range []bool{false, true} {
		plan, err := (&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "login selector"}}).Plan("")
		if err != nil {
			t.Fatal(err)
		}
		plan.BusyError = busyError
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		p, err := answerWithin(t, e, ctx, plan, 30*time.Second)
		cancel()
		if busyError {
			if h4r.ErrorCode(err) != h4r.EUNAVAILABLE || !strings.Contains(err.Error(), "full-text index") {
				t.Errorf("preferring an error: got pack %v, error %v; want unavailable naming the full-text index", p, err)
			}
			continue
		}
		if err != nil || p.Status != h4r.StatusDegraded || len(p.Results) != 0 {
			t.Errorf("got %v, %+v; want an empty degraded pack", err, p)
		}
	}
}

// panickingGenerator panics on every call, as a generator with a bug would.
type panickingGenerator struct{}

func (panickingGenerator) Name() string { return h4r.GenVector }

func (panickingGenerator) Generate(context.Context, h4r.CandidateQuery) ([]h4r.Hit, error) {
	panic("generator bug")
}

// panickingSlicer panics in Slice, as a stage with a bug would.
type panickingSlicer struct{ *scs.Slicer }

func (panickingSlicer) Slice(context.Context, h4r.Specialist, []*h4r.Item, scs.Limits) scs.Outcome {
	panic("slicer bug")
}

// TestPanickingGeneratorFailsAlone: a generator that panics in its own
// goroutine fails as an erring one does (the pack degrades and keeps the
// other generators' hits) instead of ending the process.
func TestPanickingGeneratorFailsAlone(t *testing.T) {
	a := openDemo(t)
	e := newEngine(t, a, patient, []h4r.Generator{panickingGenerator{}}, engine.WithLogger(discardLogger()))
	for name, ctx := range map[string]context.Context{"no deadline": t.Context(), "deadline": deadlineIn(t, time.Minute)} {
		t.Run(name, func(t *testing.T) {
			plan, err := (&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "login selector"}}).Plan("")
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Run(ctx, healer(), plan)
			vectorFailedAlone(t, p, err, "internal error")
		})
	}
}

// TestPanickingStageIsAnInternalError: under a deadline the stages run in
// a goroutine of the engine's own, out of the server's recovery; a panic
// there answers the request with an internal error and frees its slot.
func TestPanickingStageIsAnInternalError(t *testing.T) {
	a := openDemo(t)
	e := newEngine(t, a, patient, nil, engine.WithMaxInFlight(1), engine.WithLogger(discardLogger()),
		engine.WithSlicer(panickingSlicer{productionSlicer(t)}))
	for i := range 2 { // the second finds the one slot free again
		plan, err := (&h4r.ContextRequest{Query: h4r.Query{Text: "login selector"}}).Plan("")
		if err != nil {
			t.Fatal(err)
		}
		p, err := answerWithin(t, e, deadlineIn(t, time.Minute), plan, 30*time.Second)
		if code := h4r.ErrorCode(err); err == nil || code != h4r.EINTERNAL {
			t.Fatalf("request %d: pack %v, error %v (code %q); want an internal error", i, p, err, code)
		}
	}
}

// deadlineIn is the test's context with a deadline d from now.
func deadlineIn(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
