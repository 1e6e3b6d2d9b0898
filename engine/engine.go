package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/conversation"
	"github.com/h4r/h4r/pack"
	"github.com/h4r/h4r/rank"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/timeref"
)

// Defaults for Settings fields left at zero.
const (
	DefaultCandidateLimit   = 100
	DefaultAnchorsFromTop   = 3
	DefaultGeneratorTimeout = time.Second
	// DefaultInFlightPerCPU packs are built at once per CPU
	// (WithMaxInFlight): enough to overlap a pack's waits on the store
	// with another's CPU work.
	DefaultInFlightPerCPU = 2
)

// lateGrace is how long past a deadline the engine waits for a stage or a
// generator that has not returned before answering without it: long
// enough for one that honours the deadline to return what it found, short
// against the server's write deadline.
const lateGrace = 100 * time.Millisecond

// Slicer applies policy and budgets to ranked items (scs.Slicer), says
// which items the policy lets a specialist see at all (the anchors of
// causal hops), and clears items without budgets (the texts that
// pseudo-relevance feedback reads).
type Slicer interface {
	Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome
	Permitted(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []bool
	Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []scs.Cleared
}

// AccessRecorder counts accesses; it must not block on I/O.
type AccessRecorder interface {
	RecordAccess(ids []string)
}

// Settings are the engine's configured values; a request may override
// weights and narrow budgets.
type Settings struct {
	Weights          h4r.Weights
	Lambda           float64
	MaxHops          int
	Budget           scs.Limits    // the server's maximum (and default) budget
	CandidateLimit   int           // hits asked of each text generator
	AnchorsFromTop   int           // anchors taken from the top relevance hits when a request gives none
	GeneratorTimeout time.Duration // each generator's own deadline
	Fusion           rank.Fusion
	// CountDeliveries makes every delivery raise the delivered items'
	// access counts (H4R_ACCESS_COUNTING=delivery). Off by default: a
	// delivery is not a use, and counting it turns frequency into a
	// popularity loop, where items that matched earlier queries win later
	// ones.
	CountDeliveries bool
	// CausalLinkTypes are the link types hops follow when a request names
	// none (H4R_CAUSAL_LINK_TYPES); empty: every type. Turn order (follows)
	// and containment are left out by default: the turn after a text hit
	// is near it, not its cause, and at causality's weight it would outrank
	// the turns that answer.
	CausalLinkTypes []string
	// Expansion are the parameters of pseudo-relevance feedback, and
	// ExpandQueries whether a request that does not say gets it
	// (H4R_QUERY_EXPANSION); see expand.go.
	Expansion     analysis.Expansion
	ExpandQueries bool
	// VectorFeedback moves the query vector toward the first pass's best
	// items and searches vectors again (H4R_VECTOR_FEEDBACK_DOCS,
	// H4R_VECTOR_FEEDBACK_WEIGHT); see vecfeedback.go.
	VectorFeedback VectorFeedback
	// Conversation, when set, adds the evidence of conversations to the
	// candidates (H4R_CONVERSATION): the session of each text hit and the
	// turns around the top ones, and the time the question names. Its
	// sources fuse into relevance with Fusion's weights for them.
	Conversation *conversation.Options
}

// Engine answers context requests. It is safe for concurrent use.
type Engine struct {
	text     []h4r.Generator // relevance generators, in evidence order
	graph    h4r.Generator   // causal hops; may be nil
	slicer   Slicer
	builder  *pack.Builder
	access   AccessRecorder
	settings Settings
	now      func() time.Time
	log      *slog.Logger
	// slots bounds the packs built at once; waiting callers are served in
	// arrival order. nil: no bound.
	slots chan struct{}
	// loading names the in-memory indexes still being loaded (WithLoading);
	// nil: none are.
	loading func() []string

	expansion expansion // pseudo-relevance feedback (expand.go)

	// snapshots, when set, gives the store stages of a pack one read
	// snapshot (WithSnapshots); nil: each read takes its own.
	snapshots Snapshots

	workers *workers // run the build and the generators (workers.go)
}

// Option configures an Engine.
type Option func(*Engine)

// WithTextGenerators sets the relevance generators (full-text, vectors).
func WithTextGenerators(g ...h4r.Generator) Option {
	return func(e *Engine) { e.text = append(e.text, g...) }
}

// WithGraphGenerator sets the causal-hop generator.
func WithGraphGenerator(g h4r.Generator) Option { return func(e *Engine) { e.graph = g } }

// Snapshots is a store whose reads under one context can share one read
// transaction (sqlite.Store.Snapshot): release ends it once the reads are
// over.
type Snapshots interface {
	Snapshot(ctx context.Context) (_ context.Context, release func(), err error)
}

// WithSnapshots has the stages of a pack that read the store (the
// generators, the walk for superseding items) read it in one snapshot of
// s: they see one state of it, and a store that pays for each transaction
// (SQLite: beginning one, reading its generation counters, ending it) pays
// once a pack instead of once a stage. A snapshot that cannot be taken
// leaves each read to its own, as without the option.
func WithSnapshots(s Snapshots) Option { return func(e *Engine) { e.snapshots = s } }

// WithSlicer sets the policy slicer (required).
func WithSlicer(s Slicer) Option { return func(e *Engine) { e.slicer = s } }

// WithPackBuilder sets the pack builder (default: pack.NewBuilder()).
func WithPackBuilder(b *pack.Builder) Option { return func(e *Engine) { e.builder = b } }

// WithAccessRecorder sets who counts deliveries (usually the store).
func WithAccessRecorder(a AccessRecorder) Option { return func(e *Engine) { e.access = a } }

// WithSettings sets the configured weights, budgets and limits.
func WithSettings(s Settings) Option { return func(e *Engine) { e.settings = s } }

// WithClock sets the clock recency is measured against.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithMaxInFlight bounds the packs built at once (default
// DefaultInFlightPerCPU per CPU); n <= 0 removes the bound. A pack is CPU
// work: past a few per core, more at once only share the cores, so every
// one of them runs long and its generators miss their deadlines together.
// Bounded, the others wait their turn, and a request that gets no slot
// within half its deadline comes back empty and degraded, saying the
// server was busy (or as an unavailable error, Plan.BusyError). The bound
// holds for every caller: HTTP and A2A packs, MCP tools, POST /query,
// trace search, the CLI and the benchmark.
func WithMaxInFlight(n int) Option {
	return func(e *Engine) {
		e.slots = nil
		if n > 0 {
			e.slots = make(chan struct{}, n)
		}
	}
}

// WithLoading tells the engine what the store is still loading into memory
// (the full-text index, the vectors, the link graph at start), so that a
// pack answered late because a search waited for one says so.
func WithLoading(loading func() []string) Option { return func(e *Engine) { e.loading = loading } }

// New returns an Engine. It needs at least one text generator and a slicer.
func New(opts ...Option) (*Engine, error) {
	e := &Engine{now: time.Now, log: slog.Default(), slots: make(chan struct{}, DefaultInFlightPerCPU*runtime.GOMAXPROCS(0)), workers: newWorkers()}
	for _, o := range opts {
		o(e)
	}
	if len(e.text) == 0 {
		return nil, errors.New("engine: at least one text generator is required")
	}
	if e.slicer == nil {
		return nil, errors.New("engine: a slicer is required")
	}
	if e.expansion.analyzer == nil {
		e.expansion.analyzer = analysis.Default()
	}
	if e.settings.Expansion == (analysis.Expansion{}) {
		e.settings.Expansion = analysis.DefaultExpansion()
	}
	if e.builder == nil {
		e.builder = pack.NewBuilder()
	}
	s := &e.settings
	if s.CandidateLimit <= 0 {
		s.CandidateLimit = DefaultCandidateLimit
	}
	if s.AnchorsFromTop <= 0 {
		s.AnchorsFromTop = DefaultAnchorsFromTop
	}
	if s.GeneratorTimeout <= 0 {
		s.GeneratorTimeout = DefaultGeneratorTimeout
	}
	if s.MaxHops <= 0 {
		s.MaxHops = h4r.DefaultMaxHops
	}
	if s.Budget.MaxBytes <= 0 || s.Budget.MaxTokens <= 0 || s.Budget.MaxItems <= 0 {
		return nil, fmt.Errorf("engine: budget limits must be positive, got %+v", s.Budget)
	}
	if err := s.Weights.Validate("weights"); err != nil {
		return nil, fmt.Errorf("engine: configured weights: %w", err)
	}
	return e, nil
}

// ContextPack plans req (validating it once) and runs it for the given
// specialist; see Run.
func (e *Engine) ContextPack(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest) (*h4r.Pack, error) {
	plan, err := req.Plan("")
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, spec, plan)
}

// Stats are the counts and timings of one pack's stages, each stage filling
// its own part. The pack's timings and slicing statistics are read from
// them.
type Stats struct {
	Candidates    int                        // merged candidates, all generators
	Generators    map[string]h4r.SourceStats // per generator: hits, time, error
	CandidateTime time.Duration
	RankTime      time.Duration
	Slicing       h4r.SlicingStats // policy, budget and min_score outcomes
	SliceTime     time.Duration
	Kept          int // items delivered
	PolicyFailed  int // items left out because no policy decision could be made
}

// Run answers one planned request for the given specialist, in stages:
// candidates, ranking, slicing, building. The specialist is the
// authenticated identity (narrowed by the request where allowed); the
// engine trusts it. Errors are *h4r.Error: invalid_argument for weights
// that cannot rank. Generator failures and an expired deadline do not fail
// the request: they degrade the pack.
func (e *Engine) Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
	start := time.Now()
	req := &plan.Request
	weights, err := e.weights(req)
	if err != nil {
		return nil, err
	}
	release, admitted := e.admit(ctx)
	if !admitted {
		return e.busy(ctx, spec, plan, weights, start)
	}
	if _, has := ctx.Deadline(); !has {
		defer release()
		p, entries := e.build(ctx, spec, plan, weights, start)
		e.recordDeliveries(entries)
		return p, nil
	}
	// The stages run apart from the caller, so that one stuck past the
	// deadline (a search waiting for an in-memory index being loaded, which
	// takes minutes at a million items) cannot hold the request past it:
	// the caller gets a late answer instead (late), and the stages keep
	// the slot until they return, so that stuck packs still count against
	// the bound.
	type built struct {
		p       *h4r.Pack
		entries []pack.Entry
		err     error
	}
	done := make(chan built, 1)
	e.workers.Go(func() {
		defer release()
		var b built
		// A panic here is out of the reach of the server's recovery, which
		// guards only the request's own goroutine: it would end the process.
		defer func() {
			if r := recover(); r != nil {
				b.err = e.stagePanic(ctx, "pack stages", r)
			}
			done <- b
		}()
		b.p, b.entries = e.build(ctx, spec, plan, weights, start)
	})
	deliver := func(b built) (*h4r.Pack, error) {
		if b.err != nil {
			return nil, b.err
		}
		if err := e.loadingError(plan, b.p); err != nil {
			return nil, err
		}
		e.recordDeliveries(b.entries)
		return b.p, nil
	}
	select {
	case b := <-done:
		return deliver(b)
	case <-ctx.Done():
	}
	// The stages see the deadline too and most return a degraded pack
	// within moments of it: that pack holds what was found in time.
	grace := time.NewTimer(lateGrace)
	defer grace.Stop()
	select {
	case b := <-done:
		return deliver(b)
	case <-grace.C:
		return e.late(ctx, spec, plan, weights, start)
	}
}

// stagePanic logs a panic recovered in a goroutine of the engine's own,
// with its stack, and returns the internal error that stands for it.
func (e *Engine) stagePanic(ctx context.Context, where string, r any) error {
	e.log.ErrorContext(ctx, "panic in "+where, "panic", r, "stack", string(debug.Stack()))
	return &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error in " + where}
}

// build runs the stages of an admitted pack: candidates, ranking, slicing,
// building. It returns the pack and its entries, whose deliveries the
// caller records once the pack is delivered.
func (e *Engine) build(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan, weights h4r.Weights, start time.Time) (*h4r.Pack, []pack.Entry) {
	req := &plan.Request
	var stats Stats
	limits, warnings := e.limits(req)

	now := e.now()
	if !plan.AsOf.IsZero() {
		now = plan.AsOf
	}
	readCtx, release := e.snapshot(ctx)
	cands, w := e.candidates(readCtx, spec, req, plan.Filters, now, &stats)
	warnings = append(warnings, w...)

	cands, w = e.supersede(readCtx, spec, plan, cands)
	warnings = append(warnings, w...)
	release() // the stages after these read no store

	ranked, w := e.rank(cands, weights, plan, now, &stats)
	warnings = append(warnings, w...)

	entries, w := e.slice(ctx, spec, req, ranked, limits, &stats)
	warnings = append(warnings, w...)

	status := h4r.StatusOK
	for _, g := range stats.Generators {
		if g.Error != "" {
			status = h4r.StatusDegraded
		}
	}
	// A pack that is empty because no policy decision could be made is not
	// an answer, it is an outage.
	if stats.PolicyFailed > 0 && stats.PolicyFailed == stats.Slicing.TotalCandidates-stats.Slicing.TotalDroppedScore {
		status = h4r.StatusDegraded
	}
	if ctx.Err() != nil {
		status = h4r.StatusDegraded
		warnings = append(warnings, "the request deadline expired: the pack holds what was found in time")
	}
	normalized, _ := weights.Normalized()
	p := e.builder.Build(pack.Input{
		Query:      req.Query.Text,
		Specialist: spec,
		Entries:    entries,
		Slicing:    stats.Slicing,
		Sources:    stats.Generators,
		Timings: h4r.Timings{
			CandidateMs: ms(stats.CandidateTime),
			RankingMs:   ms(stats.RankTime),
			RetrievalMs: ms(stats.CandidateTime + stats.RankTime),
			SlicingMs:   ms(stats.SliceTime),
		},
		Start:         start,
		Weights:       normalized,
		Warnings:      warnings,
		Status:        status,
		IncludeScores: req.IncludeScores == nil || *req.IncludeScores,
		TLDRSentences: req.TLDRSentences,
		IncludeGraph:  req.IncludeGraph,
		ExplainAll:    req.Explain == h4r.ExplainAll,
		Audit:         plan.Audit,
	})
	return p, entries
}

// snapshot returns the context the store stages of a pack read under, one
// snapshot when the store offers them, and what ends it.
func (e *Engine) snapshot(ctx context.Context) (context.Context, func()) {
	if e.snapshots == nil {
		return ctx, func() {}
	}
	sctx, release, err := e.snapshots.Snapshot(ctx)
	if err != nil {
		e.log.DebugContext(ctx, "reading without a snapshot", "err", err)
		return ctx, func() {}
	}
	return sctx, release
}

// loadingError is the unavailable error that replaces an empty degraded
// pack built while the store was still loading indexes into memory, for a
// caller that prefers an error it can retry on (Plan.BusyError); nil
// otherwise.
func (e *Engine) loadingError(plan *h4r.Plan, p *h4r.Pack) error {
	if !plan.BusyError || e.loading == nil || p.Status != h4r.StatusDegraded || len(p.Results) > 0 {
		return nil
	}
	names := e.loading()
	if len(names) == 0 {
		return nil
	}
	return h4r.Errorf(h4r.EUNAVAILABLE, "", "the server is still loading its in-memory %s, and the pack found nothing without it; retry after a pause", strings.Join(names, ", "))
}

// late answers a request whose stages did not return by its deadline (and
// a short grace after it): an unavailable error when the caller prefers one
// (Plan.BusyError), otherwise an empty degraded pack saying why, naming
// the in-memory indexes still being loaded (WithLoading) when there are.
func (e *Engine) late(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan, weights h4r.Weights, start time.Time) (*h4r.Pack, error) {
	waited := time.Since(start).Round(time.Millisecond)
	why := "the pack's stages did not finish"
	if e.loading != nil {
		if names := e.loading(); len(names) > 0 {
			why = fmt.Sprintf("the server was still loading its in-memory %s", strings.Join(names, ", "))
		}
	}
	e.log.WarnContext(ctx, "late: the request deadline expired before the pack's stages returned", "reason", why, "waited", waited)
	if plan.BusyError {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the pack could not be built within the request deadline (%s): %s; retry after a pause", waited, why)
	}
	normalized, _ := weights.Normalized()
	return e.builder.Build(pack.Input{
		Query: plan.Request.Query.Text, Specialist: spec, Sources: map[string]h4r.SourceStats{}, Start: start,
		Weights: normalized, Status: h4r.StatusDegraded, Audit: plan.Audit,
		Warnings: []string{fmt.Sprintf("the request deadline expired after %s and %s, so this pack is empty; retry after a pause", waited, why)},
	}), nil
}

// admit waits for one of the slots that bound the packs built at once.
// It waits at most half the time left before ctx's deadline, so that an
// admitted pack has the other half to be built in; without a deadline it
// waits until ctx ends. A free slot is taken even when ctx has ended: the
// pack then degrades as any late pack does. This is the one admission
// point for packs: every caller (HTTP, A2A, MCP, /query, the CLI, the
// benchmark) is admitted here.
func (e *Engine) admit(ctx context.Context) (release func(), ok bool) {
	if e.slots == nil {
		return func() {}, true
	}
	release = func() { <-e.slots }
	select {
	case e.slots <- struct{}{}:
		return release, true
	default:
	}
	if deadline, has := ctx.Deadline(); has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		defer cancel()
	}
	select {
	case e.slots <- struct{}{}:
		return release, true
	case <-ctx.Done():
		return nil, false
	}
}

// busy answers a request that got no slot in time: an unavailable error
// when the caller prefers one (Plan.BusyError, "Prefer: busy=503" over
// HTTP), otherwise an empty degraded pack saying why.
func (e *Engine) busy(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan, weights h4r.Weights, start time.Time) (*h4r.Pack, error) {
	waited := time.Since(start).Round(time.Millisecond)
	e.log.WarnContext(ctx, "busy: no pack slot within half the request deadline", "slots", cap(e.slots), "waited", waited)
	if plan.BusyError {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the server is busy: %d packs were being built and none finished within %s (half the request deadline); retry after a pause", cap(e.slots), waited)
	}
	normalized, _ := weights.Normalized()
	return e.builder.Build(pack.Input{
		Query: plan.Request.Query.Text, Specialist: spec, Sources: map[string]h4r.SourceStats{}, Start: start,
		Weights: normalized, Status: h4r.StatusDegraded, Audit: plan.Audit,
		Warnings: []string{fmt.Sprintf("the server was busy: %d packs were being built and none finished within %s (half the request deadline), so this pack is empty; retry after a pause", cap(e.slots), waited)},
	}), nil
}

// InFlight is the number of packs being built now (h4r_packs_in_flight).
func (e *Engine) InFlight() int { return len(e.slots) }

// HoldSlots takes every pack slot, as a burst of slow packs would, until
// release is called: the busy path, made reproducible for tests.
func (e *Engine) HoldSlots() (release func()) {
	n := cap(e.slots)
	for range n {
		e.slots <- struct{}{}
	}
	return func() {
		for range n {
			<-e.slots
		}
	}
}

// weights are the configured weights with the request's overrides.
func (e *Engine) weights(req *h4r.ContextRequest) (h4r.Weights, error) {
	weights, err := e.settings.Weights.Override("weights", req.Weights)
	if err != nil {
		return weights, err
	}
	return weights, weights.Validate("weights")
}

// rank scores and orders the candidates.
func (e *Engine) rank(cands []*h4r.Candidate, weights h4r.Weights, plan *h4r.Plan, now time.Time, stats *Stats) ([]rank.Ranked, []string) {
	t0 := time.Now()
	ranked, warnings := rank.Rank(cands, rank.Options{
		Weights: weights, Lambda: e.settings.Lambda, Now: now, Fusion: e.settings.Fusion,
		KeepSuperseded: supersededMode(&plan.Request) == h4r.SupersededKeep, ValidAt: plan.ValidAt,
		DeferExplanations: true, // the pack builder writes those it shows
	})
	stats.RankTime = time.Since(t0)
	return ranked, warnings
}

// slice applies min_score, then policy and budgets, to the ranked
// candidates: items under min_score never reach the policy.
func (e *Engine) slice(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest, ranked []rank.Ranked, limits scs.Limits, stats *Stats) ([]pack.Entry, []string) {
	t0 := time.Now()
	entries := make([]pack.Entry, len(ranked))
	toSlice := make([]*h4r.Item, 0, len(ranked))
	sliceIdx := make([]int, 0, len(ranked))
	for i := range ranked {
		r := &ranked[i]
		entries[i].Ranked = r
		if r.Score < req.MinScore {
			entries[i].Reason = h4r.ReasonMinScore
			entries[i].Detail = fmt.Sprintf("score %.3f is under min_score %.3f", r.Score, req.MinScore)
			continue
		}
		toSlice = append(toSlice, r.Candidate.Item)
		sliceIdx = append(sliceIdx, i)
	}
	outcome := e.slicer.Slice(ctx, spec, toSlice, limits)
	for j, v := range outcome.Verdicts {
		en := &entries[sliceIdx[j]]
		en.Reason, en.Detail = v.Reason, v.Detail
		en.Redacted, en.RedactedFields = v.Redacted, v.RedactedFields
		en.Delivered, en.Bytes, en.Tokens = v.Delivered, v.Bytes, v.Tokens
		if v.Reason == h4r.ReasonKept {
			stats.Kept++
		}
	}
	if outcome.Err != nil {
		// The pack only counts these; the error names policy files and
		// lines, so it goes to the log (and the decision log) alone.
		e.log.WarnContext(ctx, "no policy decision could be made", "items", outcome.Failed, "error", outcome.Err)
	}
	stats.PolicyFailed = outcome.Failed
	stats.Slicing = outcome.Stats
	stats.Slicing.TotalCandidates = len(ranked)
	stats.Slicing.TotalDroppedScore = len(ranked) - len(toSlice)
	stats.SliceTime = time.Since(t0)
	return entries, outcome.Warnings
}

// recordDeliveries tells the access recorder which items were delivered,
// when deliveries count as accesses (Settings.CountDeliveries).
func (e *Engine) recordDeliveries(entries []pack.Entry) {
	if e.access == nil || !e.settings.CountDeliveries {
		return
	}
	var kept []string
	for _, en := range entries {
		if en.Reason == h4r.ReasonKept {
			kept = append(kept, en.Ranked.Candidate.Item.ID)
		}
	}
	if len(kept) > 0 {
		e.access.RecordAccess(kept)
	}
}

// limits narrows the configured budget by the request's budget and limit. A
// request may ask for less than the server allows, never more: a larger
// value is clamped and the pack says so.
func (e *Engine) limits(req *h4r.ContextRequest) (scs.Limits, []string) {
	l := e.settings.Budget
	var warnings []string
	narrow := func(name string, asked int, max *int) {
		switch {
		case asked <= 0:
		case asked > *max:
			warnings = append(warnings, fmt.Sprintf("budget.%s %d is above the server's limit %d; %d applies", name, asked, *max, *max))
		default:
			*max = asked
		}
	}
	if b := req.Budget; b != nil {
		narrow("maxBytes", b.MaxBytes, &l.MaxBytes)
		narrow("maxTokens", b.MaxTokens, &l.MaxTokens)
		narrow("maxItems", b.MaxItems, &l.MaxItems)
	}
	if req.Limit > 0 && req.Limit < l.MaxItems {
		l.MaxItems = req.Limit
	}
	return l, warnings
}

// generatorRun is one generator's answer.
type generatorRun struct {
	name    string
	hits    []h4r.Hit
	took    time.Duration
	err     error  // the generator failed: no hits, the pack is degraded
	warning string // the generator answered from its fallback
}

// candidates runs the generators the query type asks for and merges their
// hits. Text generators run concurrently; hops run alongside them when the
// request names anchors, and after them (from the top text hits) when it
// does not. Hops start only from anchors the policy lets spec see: from
// any other they would deliver the items it links to, and so tell the
// caller of links it may not see. now is when the question is asked.
func (e *Engine) candidates(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest, filters h4r.Filters, now time.Time, stats *Stats) ([]*h4r.Candidate, []string) {
	t0 := time.Now()
	var warnings []string
	text := e.textGenerators(req.Query.Type, &warnings)
	q := h4r.CandidateQuery{
		Text: req.Query.Text, Filters: filters, Limit: e.settings.CandidateLimit,
		Anchors: req.Anchors, MaxHops: e.settings.MaxHops, Directed: req.Directed, LinkTypes: req.LinkTypes,
	}
	if req.MaxHops > 0 {
		q.MaxHops = req.MaxHops
	}
	if len(q.LinkTypes) == 0 {
		q.LinkTypes = e.settings.CausalLinkTypes
	}
	// A causal query with anchors is driven by hops alone.
	if req.Query.Type == h4r.QueryCausal && len(req.Anchors) > 0 {
		text = nil
	}
	if req.Query.Text == "" {
		text = nil
	}

	gens := text
	hopsNow := e.graph != nil && len(req.Anchors) > 0
	var anchorRun *generatorRun // the anchors could not be checked: hops fail
	if hopsNow {
		t0 := time.Now()
		anchors, err := e.permittedAnchors(ctx, spec, req.Anchors)
		if err != nil {
			anchorRun = &generatorRun{name: e.graph.Name(), took: time.Since(t0), err: fmt.Errorf("reading the anchors to check them against the policy: %w", err)}
		} else {
			// Run even with no anchor left, as for anchors that do not
			// exist: the pack must not tell the two apart.
			q.Anchors = anchors
			gens = append(append([]h4r.Generator{}, text...), e.graph)
		}
	}
	runs := e.runAll(ctx, gens, q)
	warnings = append(warnings, e.expand(ctx, spec, req, runs, gens, q)...)
	warnings = append(warnings, e.vectorFeedback(ctx, spec, runs, gens, q)...)
	if anchorRun != nil {
		runs = append(runs, *anchorRun)
	}
	if e.graph != nil && !hopsNow {
		q.Anchors = e.permitted(ctx, spec, topAnchors(runs, e.settings.AnchorsFromTop))
		if len(q.Anchors) > 0 {
			runs = append(runs, e.runAll(ctx, []h4r.Generator{e.graph}, q)...)
		}
	}
	e.targetDistances(ctx, runs, q)
	if e.settings.Conversation != nil {
		runs = append(runs, e.conversation(ctx, spec, runs, q, now)...)
	}

	order := make([]string, 0, len(runs))
	hits := make(map[string][]h4r.Hit, len(runs))
	stats.Generators = make(map[string]h4r.SourceStats, len(runs))
	for _, r := range runs {
		st := h4r.SourceStats{Candidates: len(r.hits), Ms: ms(r.took)}
		if r.warning != "" {
			warnings = append(warnings, fmt.Sprintf("generator %s: %s", r.name, r.warning))
			e.log.WarnContext(ctx, "generator answered from its fallback", "generator", r.name, "warning", r.warning)
		}
		if r.err != nil {
			st.Error = r.err.Error()
			warnings = append(warnings, fmt.Sprintf("generator %s failed: %v", r.name, r.err))
			e.log.WarnContext(ctx, "generator failed", "generator", r.name, "error", r.err)
		}
		stats.Generators[r.name] = st
		order = append(order, r.name)
		hits[r.name] = r.hits
	}
	cands := h4r.Merge(order, hits)
	stats.Candidates, stats.CandidateTime = len(cands), time.Since(t0)
	return cands, warnings
}

// targetDistances asks the graph for the distances of the text candidates
// the hop walk did not return. The walk returns the nearest q.Limit items;
// on a dense graph those are all one hop away, and a text candidate two or
// three hops from an anchor would get no causality at all. Only a walk cut
// at its limit can have missed one: a shorter walk reached every item
// within q.MaxHops. The distances found are added to the graph's hits; if
// asking fails, the graph's run fails (the pack is degraded) but keeps the
// walk's hits.
func (e *Engine) targetDistances(ctx context.Context, runs []generatorRun, q h4r.CandidateQuery) {
	if e.graph == nil {
		return
	}
	g := slices.IndexFunc(runs, func(r generatorRun) bool { return r.name == e.graph.Name() })
	if g < 0 || runs[g].err != nil || len(runs[g].hits) < q.Limit || len(q.Anchors) == 0 {
		return
	}
	reached := make(map[string]bool, len(runs[g].hits))
	for _, h := range runs[g].hits {
		reached[h.Item.ID] = true
	}
	var targets []string
	for _, r := range runs {
		if r.name == runs[g].name {
			continue
		}
		for _, h := range r.hits {
			if id := h.Item.ID; !reached[id] {
				reached[id] = true
				targets = append(targets, id)
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	q.Targets, q.Limit = targets, 0
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	defer cancel()
	t0 := time.Now()
	hits, err := e.graph.Generate(gctx, q)
	runs[g].took += time.Since(t0)
	var fallback *h4r.FallbackError
	switch {
	case errors.As(err, &fallback):
		if runs[g].warning == "" {
			runs[g].warning = fallback.Error()
		}
	case err != nil:
		runs[g].err = fmt.Errorf("asking the distances of %d text candidates: %w", len(targets), err)
		return
	}
	asked := make(map[string]bool, len(targets))
	for _, id := range targets {
		asked[id] = true
	}
	for _, h := range hits {
		if h.Item != nil && asked[h.Item.ID] { // a generator that ignored Targets adds nothing else
			asked[h.Item.ID] = false
			runs[g].hits = append(runs[g].hits, h)
		}
	}
}

// conversation adds the evidence of conversations to the runs: the
// session of each text hit and the turns around the top ones, and how near
// each candidate is to the time the question names. Both are built from
// the items the policy lets spec see alone: a hidden turn would otherwise
// be an anchor (its neighbours revealed), lengthen or score its session,
// or decide whether the time separates the candidates, and each of those
// shows in the visible items' scores.
func (e *Engine) conversation(ctx context.Context, spec h4r.Specialist, runs []generatorRun, q h4r.CandidateQuery, now time.Time) []generatorRun {
	var text [][]h4r.Hit
	for _, r := range runs {
		if e.graph == nil || r.name != e.graph.Name() {
			text = append(text, r.hits)
		}
	}
	var out []generatorRun
	t0 := time.Now()
	var walk conversation.Walker
	if e.graph != nil {
		walk = e.graph
	}
	// Each item is asked about once: the session walk and the time
	// evidence ask about the same hits.
	decided := map[string]bool{}
	permitted := func(items []*h4r.Item) []*h4r.Item {
		var ask []*h4r.Item
		for _, it := range items {
			if _, ok := decided[it.ID]; !ok {
				ask = append(ask, it)
			}
		}
		for i, ok := range e.slicer.Permitted(ctx, spec, ask) {
			decided[ask[i].ID] = ok
		}
		var keep []*h4r.Item
		for _, it := range items {
			if decided[it.ID] {
				keep = append(keep, it)
			}
		}
		return keep
	}
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	hits, err := conversation.SessionEvidence(gctx, text, walk, permitted, q.Filters, *e.settings.Conversation)
	cancel()
	if len(hits) > 0 || err != nil {
		out = append(out, generatorRun{name: conversation.GenSession, hits: hits, took: time.Since(t0), err: err})
	}
	w, ok := timeref.Find(q.Text, now)
	if !ok {
		return out
	}
	t0 = time.Now()
	seen := map[string]bool{}
	var items []*h4r.Item
	for _, r := range append(slices.Clone(runs), out...) {
		for _, h := range r.hits {
			if h.Item != nil && !seen[h.Item.ID] {
				seen[h.Item.ID] = true
				items = append(items, h.Item)
			}
		}
	}
	if hits := conversation.TimeEvidence(permitted(items), w); len(hits) > 0 {
		out = append(out, generatorRun{name: conversation.GenTime, hits: hits, took: time.Since(t0)})
	}
	return out
}

// textGenerators picks the relevance generators for a query type.
func (e *Engine) textGenerators(t h4r.QueryType, warnings *[]string) []h4r.Generator {
	var fulltext, vector []h4r.Generator
	for _, g := range e.text {
		if g.Name() == h4r.GenVector {
			vector = append(vector, g)
		} else {
			fulltext = append(fulltext, g)
		}
	}
	switch t {
	case h4r.QueryKeyword:
		return fulltext
	case h4r.QuerySemantic:
		if len(vector) == 0 {
			*warnings = append(*warnings, "no vector generator is configured: the semantic query was answered by full-text search")
			return fulltext
		}
		return vector
	case h4r.QueryHybrid:
		if len(vector) == 0 {
			*warnings = append(*warnings, "no vector generator is configured: the hybrid query was answered by full-text search alone")
		}
	}
	return e.text
}

// runAll runs generators concurrently, each under its own deadline. A
// generator that has not returned lateGrace after that deadline (one
// waiting for an index being loaded, which does not see the deadline) is
// left to finish alone: its run counts as timed out, so the pack goes on
// with the others' hits.
func (e *Engine) runAll(ctx context.Context, gens []h4r.Generator, q h4r.CandidateQuery) []generatorRun {
	type result struct {
		i   int
		run generatorRun
	}
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	defer cancel()
	results := make(chan result, len(gens))
	t0 := time.Now()
	for i, g := range gens {
		e.workers.Go(func() {
			hits, err := e.generate(gctx, g, q)
			run := generatorRun{name: g.Name(), hits: hits, took: time.Since(t0), err: err}
			var fallback *h4r.FallbackError
			if errors.As(err, &fallback) {
				run.err, run.warning = nil, fallback.Error()
			} else if err != nil {
				run.hits = nil
				if errors.Is(err, context.DeadlineExceeded) || gctx.Err() != nil {
					run.err = fmt.Errorf("timed out after %s: %w", e.settings.GeneratorTimeout, err)
				}
			}
			results <- result{i, run}
		})
	}
	runs := make([]generatorRun, len(gens))
	returned := make([]bool, len(gens))
	expired := gctx.Done()
	var abandon <-chan time.Time
	for pending := len(gens); pending > 0; pending-- {
		select {
		case r := <-results:
			runs[r.i], returned[r.i] = r.run, true
			continue
		case <-expired:
			t := time.NewTimer(lateGrace)
			defer t.Stop()
			expired, abandon = nil, t.C
			pending++ // nothing was received: the loop decrements it back
			continue
		case <-abandon:
		}
		for i, g := range gens {
			if !returned[i] {
				runs[i] = generatorRun{name: g.Name(), took: time.Since(t0), err: fmt.Errorf("timed out after %s: it had not returned %s later", e.settings.GeneratorTimeout, lateGrace)}
			}
		}
		break
	}
	return runs
}

// generate runs one generator; a panic in it fails that generator alone,
// as an error would, since its goroutine is out of the reach of the
// server's recovery.
func (e *Engine) generate(ctx context.Context, g h4r.Generator, q h4r.CandidateQuery) (hits []h4r.Hit, err error) {
	defer func() {
		if r := recover(); r != nil {
			hits, err = nil, e.stagePanic(ctx, "generator "+g.Name(), r)
		}
	}()
	return g.Generate(ctx, q)
}

// topAnchors returns the top n hits' items of each text generator.
func topAnchors(runs []generatorRun, n int) []*h4r.Item {
	seen := map[string]bool{}
	var out []*h4r.Item
	for _, r := range runs {
		for i, h := range r.hits {
			if i >= n {
				break
			}
			if !seen[h.Item.ID] {
				seen[h.Item.ID] = true
				out = append(out, h.Item)
			}
		}
	}
	return out
}

// permitted returns the ids of the items the policy lets spec see, in
// order.
func (e *Engine) permitted(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []string {
	var out []string
	for i, ok := range e.slicer.Permitted(ctx, spec, items) {
		if ok {
			out = append(out, items[i].ID)
		}
	}
	return out
}

// permittedAnchors returns the request's anchors that exist and that the
// policy lets spec see. They are read through the graph generator, which
// returns the anchors at distance 0 before any neighbour, so a limit of
// one hit per anchor reads them all; an anchor it did not return is left
// out (fail closed), as one that does not exist.
func (e *Engine) permittedAnchors(ctx context.Context, spec h4r.Specialist, ids []string) ([]string, error) {
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	defer cancel()
	hits, err := e.graph.Generate(gctx, h4r.CandidateQuery{Anchors: ids, MaxHops: 1, Directed: true, Limit: len(ids)})
	var fallback *h4r.FallbackError
	if err != nil && !errors.As(err, &fallback) {
		return nil, err
	}
	var items []*h4r.Item
	for _, h := range hits {
		if h.Distance == 0 && h.Item != nil {
			items = append(items, h.Item)
		}
	}
	return e.permitted(ctx, spec, items), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
