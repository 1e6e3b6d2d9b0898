package scs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/h4r/h4r"
)

// BatchDecider decides all candidates of a request at once, one result per
// item in order (policy.Engine: one evaluation over all candidates). A
// Decider that is also a BatchDecider is asked this way.
type BatchDecider interface {
	DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult
}

// CacheAnswerer is a decider that can answer the items whose decisions
// it has cached without asking the policy (policy.Cached): it fills out
// (one result per item) and returns the positions of the rest. The
// slicer asks it first, on the calling goroutine, and shares out only the
// rest among workers, so that a warm batch starts no goroutines. It takes
// no context: it never waits.
type CacheAnswerer interface {
	DecideCached(spec h4r.Specialist, items []*h4r.Item, out []h4r.DecisionResult) (rest []int)
}

// PackPolicy is a policy that may also return pack-level settings (the
// rule pack of package cmo.context): budgets that narrow the request's.
type PackPolicy interface {
	PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error)
}

// Snapshotter is a policy that can be replaced while the server runs
// (policy.Live). Slice takes one snapshot and decides every item of the
// request with it, so a request in flight during a reload finishes on the
// policy it started with.
type Snapshotter interface {
	Snapshot() h4r.Decider
}

// revisioned is a Decider that can name its policy (policy.Engine).
type revisioned interface{ Revision() string }

// TokenCounter counts tokens exactly (tokens.Counter).
type TokenCounter interface {
	Count(text string) int
}

// Limits are the budgets of one pack. Each must be > 0; a limit of zero or
// less leaves every item out for that limit.
type Limits struct {
	MaxBytes, MaxTokens, MaxItems int
}

// Validate reports the first limit that is not positive as an
// invalid_argument error naming budget.maxBytes, budget.maxTokens or
// budget.maxItems.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"maxBytes", l.MaxBytes}, {"maxTokens", l.MaxTokens}, {"maxItems", l.MaxItems}} {
		if f.v <= 0 {
			return h4r.Errorf(h4r.EINVALID, "budget."+f.name, "budget must be > 0, got %d", f.v)
		}
	}
	return nil
}

// Slicer applies policy and budgets to ranked items. It is safe for
// concurrent use.
type Slicer struct {
	decider     h4r.Decider
	fallback    h4r.Decider
	counter     TokenCounter
	marker      string
	concurrency int
	perItem     bool
	log         DecisionLogger
	sizes       *lru.Cache[sizeKey, [2]int] // sizes of redacted deliveries; nil: none kept
}

// DefaultSizeCache is how many redacted deliveries' sizes a Slicer keeps.
const DefaultSizeCache = 10_000

// Option configures a Slicer.
type Option func(*Slicer)

// WithFallback sets the Decider used for an item when the main decider
// fails (SCS_OPA_FALLBACK_LOCAL=true gives policy.LocalRules). nil, the
// default, fails closed: such items are dropped.
func WithFallback(d h4r.Decider) Option { return func(s *Slicer) { s.fallback = d } }

// WithRedactionMarker sets the string redacted values are replaced with
// (default "[REDACTED]").
func WithRedactionMarker(m string) Option { return func(s *Slicer) { s.marker = m } }

// WithConcurrency sets how many policy decisions one Slice makes at once
// (default GOMAXPROCS; 1 decides in order on the calling goroutine).
func WithConcurrency(n int) Option { return func(s *Slicer) { s.concurrency = max(n, 1) } }

// WithPerItem makes Slice ask the policy one item at a time even when it
// can decide a whole batch (BatchDecider). It exists to measure the two
// against each other; batches are faster (PERFORMANCE.md in package policy).
func WithPerItem() Option { return func(s *Slicer) { s.perItem = true } }

// WithSizeCache keeps the sizes of up to n redacted deliveries (default
// DefaultSizeCache; 0 keeps none).
func WithSizeCache(n int) Option {
	return func(s *Slicer) {
		s.sizes = nil
		if n > 0 {
			s.sizes, _ = lru.New[sizeKey, [2]int](n) // errors only for n <= 0
		}
	}
}

// WithDecisionLog writes every decision that drops or redacts an item to l.
func WithDecisionLog(l DecisionLogger) Option { return func(s *Slicer) { s.log = l } }

// New returns a Slicer. decider and counter are required; New panics if
// either is nil, as that is a wiring mistake, not an input.
func New(decider h4r.Decider, counter TokenCounter, opts ...Option) *Slicer {
	if decider == nil || counter == nil {
		panic("scs.New: decider and counter must not be nil")
	}
	s := &Slicer{decider: decider, counter: counter, marker: h4r.RedactionMarker, concurrency: runtime.GOMAXPROCS(0)}
	s.sizes, _ = lru.New[sizeKey, [2]int](DefaultSizeCache)
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Outcome is the result of one Slice.
type Outcome struct {
	Verdicts []Verdict // one per input item, same order
	Stats    h4r.SlicingStats
	// Warnings are for the pack: they count what went wrong and never hold
	// a policy error's text, which names policy files and lines, and items
	// the caller may not see.
	Warnings []string
	// Failed counts the items whose decision could not be made (left out);
	// Err is the first such error, or the pack settings' error, for the
	// server log and the decision log only.
	Failed int
	Err    error
}

// Verdict is what happened to one item.
type Verdict struct {
	Reason         string   // h4r.ReasonKept, h4r.ReasonPolicy, h4r.ReasonBudgetBytes/Tokens/Items
	Detail         string   // "policy: credentials", "policy error: …", "needs 2100 tokens, 900 of 30000 left"
	Redacted       bool     // some value was replaced
	RedactedFields []string // the paths that applied
	// Delivered is the item as delivered, set only when kept. Unless
	// Redacted, its Content is the input item's own map: read-only.
	Delivered *h4r.Delivered
	// Bytes and Tokens measure the delivered form; zero for items the
	// budget walk did not reach (policy drops, items after it stopped).
	Bytes, Tokens int
	Fallback      bool // decided by the fallback Decider
	// Err is why no decision could be made, or why an allowed item could
	// not be delivered: for the decision log, never for Detail.
	Err error
	// item, revision and marker make the kept item's Cleared when it is
	// asked for (Cleared): the pack path never asks, and pays nothing for it.
	item     *h4r.Item
	revision string
	marker   string
}

// decided is one item's policy outcome before budgets.
type decided struct {
	decision h4r.Decision
	err      error // no decision could be made
	fallback bool  // the fallback made the decision
}

// Slice decides every item (given in rank order) and fits the allowed ones
// into limits. See the package documentation for the rules.
func (s *Slicer) Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits Limits) Outcome {
	out := Outcome{
		Verdicts: make([]Verdict, len(items)),
		Stats:    h4r.SlicingStats{TotalCandidates: len(items)},
	}
	decider := s.snapshot(&out)
	limits, packErr := s.packLimits(ctx, decider, spec, limits, &out)
	out.Stats.BudgetLimit = h4r.BudgetUsage{Bytes: limits.MaxBytes, EstimatedTokens: limits.MaxTokens, Items: limits.MaxItems}
	var bad *h4r.Error
	if errors.As(limits.Validate(), &bad) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s must be > 0: nothing can be delivered", bad.Field))
	}
	decisions := s.decideItems(ctx, decider, spec, items, packErr)
	tally := s.fit(items, decisions, limits, &out)
	out.Warnings = append(out.Warnings, tally.warnings(firstErr(decisions))...)
	out.Stats.FallbackUsed = out.Stats.FallbackUsed || tally.fellBack > 0
	out.Failed = tally.failedClosed
	if packErr != nil {
		out.Err = packErr
	}
	if out.Err == nil {
		out.Err = firstErr(decisions)
	}
	s.logDecisions(ctx, spec, items, decisions, out)
	return out
}

// Permitted reports, per item, whether the policy allows spec to see it:
// false when it is denied or its decision cannot be made (fail closed). No
// budget applies and nothing is logged; the engine asks it about the
// anchors of causal hops, so that links are never followed from an item
// the caller may not see. It is no gate for output: build that from
// Clear's or Slice's Cleared items (TestOneGate lists its callers).
func (s *Slicer) Permitted(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []bool {
	out := make([]bool, len(items))
	if len(items) == 0 {
		return out
	}
	decider := s.snapshot(&Outcome{})
	for i, d := range s.decideAll(ctx, decider, spec, items) {
		out[i] = d.err == nil && d.decision.Allow
	}
	return out
}

// snapshot takes the policy one request decides with (a Snapshotter's
// current policy), and records its revision.
func (s *Slicer) snapshot(out *Outcome) h4r.Decider {
	decider := s.decider
	if snap, ok := decider.(Snapshotter); ok {
		decider = snap.Snapshot()
	}
	if decider == nil {
		decider = failing{}
	}
	if r, ok := decider.(revisioned); ok {
		out.Stats.PolicyRevision = r.Revision()
	}
	return decider
}

// decideItems decides every item. When the pack-level settings could not
// be read (packErr), nothing is delivered, as for an item whose decision
// cannot be made.
func (s *Slicer) decideItems(ctx context.Context, decider h4r.Decider, spec h4r.Specialist, items []*h4r.Item, packErr error) []decided {
	if packErr == nil {
		return s.decideAll(ctx, decider, spec, items)
	}
	decisions := make([]decided, len(items))
	for i := range decisions {
		decisions[i].err = packErr
	}
	return decisions
}

// sliceTally counts what fit saw, for the pack's warnings.
type sliceTally struct {
	fellBack, failedClosed, badRedactions int
}

// warnings are the pack warnings the tally calls for: counts only, the
// errors themselves go to the logs (Outcome.Err, the decision log).
func (t sliceTally) warnings(first error) []string {
	var w []string
	if t.fellBack > 0 {
		w = append(w, fmt.Sprintf("policy evaluation failed for %d items; local fallback rules decided", t.fellBack))
	}
	if t.failedClosed > 0 {
		w = append(w, fmt.Sprintf("no policy decision could be made for %d items (%s); they were left out (the server log has the error)", t.failedClosed, cause(first)))
	}
	if t.badRedactions > 0 {
		w = append(w, fmt.Sprintf("the policy asked to redact an invalid path for %d items; they were left out", t.badRedactions))
	}
	return w
}

// fit walks the items in rank order: a denied item is dropped, an allowed
// one is redacted and delivered while it fits the budget. It fills each
// verdict and the slicing statistics.
func (s *Slicer) fit(items []*h4r.Item, decisions []decided, limits Limits, out *Outcome) sliceTally {
	b := budget{limits: limits}
	var t sliceTally
	for i, item := range items {
		v, d := &out.Verdicts[i], decisions[i]
		v.Fallback = d.fallback
		if d.fallback {
			t.fellBack++
		}
		switch {
		case d.err != nil:
			t.failedClosed++
			v.Reason, v.Detail, v.Err = h4r.ReasonPolicy, "policy error: no decision could be made ("+cause(d.err)+")", d.err
		case !d.decision.Allow:
			reason := d.decision.Reason
			if reason == "" {
				reason = "denied"
			}
			v.Reason, v.Detail = h4r.ReasonPolicy, "policy: "+reason
		default:
			if err := s.deliver(item, d.decision, v, &b); err != nil {
				*v = Verdict{Reason: h4r.ReasonPolicy, Fallback: d.fallback, Err: err}
				var badPath *h4r.Error
				if errors.As(err, &badPath) {
					t.badRedactions++
					v.Detail = "policy error: " + badPath.Message
				} else {
					v.Detail = "cannot deliver: " + err.Error()
				}
			}
		}
		switch v.Reason {
		case h4r.ReasonKept:
			v.item, v.revision, v.marker = item, out.Stats.PolicyRevision, s.marker
			out.Stats.TotalKept++
			if v.Redacted {
				out.Stats.TotalRedacted++
			}
		case h4r.ReasonPolicy:
			out.Stats.TotalDroppedPolicy++
		default:
			out.Stats.TotalDroppedBudget++
		}
	}
	out.Stats.BudgetUsed = h4r.BudgetUsage{Bytes: b.bytes, EstimatedTokens: b.tokens, Items: b.items}
	return t
}

// unreachable is the error of a policy service that did not answer
// (policy.Remote).
type unreachable interface{ PolicyUnreachable() bool }

// cause says in a few words why no decision could be made. A pack shows it
// instead of the error itself, which names policy files and lines (and,
// from a remote OPA, its address): those go to the logs only.
func cause(err error) string {
	var u unreachable
	switch {
	case err == nil:
		return "no error"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "the request deadline expired"
	case errors.As(err, &u) && u.PolicyUnreachable():
		return "OPA unreachable"
	}
	return "the policy failed to evaluate"
}

func firstErr(ds []decided) error {
	for _, d := range ds {
		if d.err != nil {
			return d.err
		}
	}
	return nil
}

// packLimits asks the policy for pack-level settings and narrows limits
// with them, saying so in the outcome's warnings. An error (the policy's
// pack rule failed or returned something unreadable) is returned for the
// caller to fail closed, unless a fallback is set: then the request's
// limits stand and a warning says why.
func (s *Slicer) packLimits(ctx context.Context, decider h4r.Decider, spec h4r.Specialist, limits Limits, out *Outcome) (Limits, error) {
	pp, ok := decider.(PackPolicy)
	if !ok {
		return limits, nil
	}
	ps, err := pp.PackSettings(ctx, spec)
	if err != nil {
		if s.fallback != nil && ctx.Err() == nil {
			out.Stats.FallbackUsed = true
			out.Warnings = append(out.Warnings, "the policy's pack settings could not be read; the request's budget stands (the server log has the error)")
			out.Err = fmt.Errorf("pack settings (the fallback let the request's budget stand): %w", err)
			return limits, nil
		}
		out.Warnings = append(out.Warnings, "the policy's pack settings could not be read; nothing was delivered (the server log has the error)")
		return limits, fmt.Errorf("pack settings: %w", err)
	}
	why := ""
	if ps.Reason != "" {
		why = " (" + ps.Reason + ")"
	}
	for _, f := range []struct {
		name   string
		limit  *int
		policy int
	}{{"maxBytes", &limits.MaxBytes, ps.MaxBytes}, {"maxTokens", &limits.MaxTokens, ps.MaxTokens}, {"maxItems", &limits.MaxItems, ps.MaxItems}} {
		if f.policy > 0 && f.policy < *f.limit {
			out.Warnings = append(out.Warnings, fmt.Sprintf("the policy narrowed budget.%s from %d to %d%s", f.name, *f.limit, f.policy, why))
			*f.limit = f.policy
		}
	}
	return limits, nil
}

// decideAll makes every item's decision: from the decider's cache when it
// has one (CacheAnswerer), then in batches when the decider can (one per
// worker, s.concurrency workers), else one item at a time, s.concurrency
// at once. Items whose decision failed go to the fallback.
func (s *Slicer) decideAll(ctx context.Context, decider h4r.Decider, spec h4r.Specialist, items []*h4r.Item) []decided {
	ca, ok := decider.(CacheAnswerer)
	if !ok || s.perItem || len(items) == 0 {
		return s.decideUncached(ctx, decider, spec, items)
	}
	answered := make([]h4r.DecisionResult, len(items))
	rest := ca.DecideCached(spec, items, answered)
	if len(rest) == len(items) {
		return s.decideUncached(ctx, decider, spec, items)
	}
	out := make([]decided, len(items))
	for i, r := range answered {
		out[i] = decided{decision: r.Decision} // the rest's are replaced below
	}
	if len(rest) > 0 {
		restItems := make([]*h4r.Item, len(rest))
		for j, i := range rest {
			restItems[j] = items[i]
		}
		for j, d := range s.decideUncached(ctx, decider, spec, restItems) {
			out[rest[j]] = d
		}
	}
	return out
}

// decideUncached is decideAll without the cache.
func (s *Slicer) decideUncached(ctx context.Context, decider h4r.Decider, spec h4r.Specialist, items []*h4r.Item) []decided {
	out := make([]decided, len(items))
	workers := min(s.concurrency, len(items))
	if bd, ok := decider.(BatchDecider); ok && !s.perItem && len(items) > 0 {
		chunk := (len(items) + workers - 1) / workers
		var wg sync.WaitGroup
		for lo := 0; lo < len(items); lo += chunk {
			hi := min(lo+chunk, len(items))
			run := func() {
				for j, r := range bd.DecideBatch(ctx, spec, items[lo:hi]) {
					out[lo+j] = s.orFallback(ctx, spec, items[lo+j], r.Decision, r.Err)
				}
			}
			if hi == len(items) {
				run() // the last chunk on the calling goroutine
			} else {
				wg.Go(run)
			}
		}
		wg.Wait()
		return out
	}
	if workers <= 1 {
		for i, item := range items {
			out[i] = s.decide(ctx, decider, spec, item)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				out[i] = s.decide(ctx, decider, spec, items[i])
			}
		})
	}
	wg.Wait()
	return out
}

// decide asks the decider and, if it fails and a fallback is set, the
// fallback.
func (s *Slicer) decide(ctx context.Context, decider h4r.Decider, spec h4r.Specialist, item *h4r.Item) decided {
	if item == nil {
		return decided{err: errors.New("no item (nil)")}
	}
	d, err := decider.Decide(ctx, spec, item)
	return s.orFallback(ctx, spec, item, d, err)
}

// orFallback returns the decision, or when err is set, the fallback's.
func (s *Slicer) orFallback(ctx context.Context, spec h4r.Specialist, item *h4r.Item, d h4r.Decision, err error) decided {
	if item == nil {
		return decided{err: errors.New("no item (nil)")}
	}
	if err == nil {
		return decided{decision: d}
	}
	// A cancelled request is not a policy failure: the fallback would only
	// decide items nobody waits for, and report a fallback that was not
	// needed.
	if s.fallback == nil || ctx.Err() != nil {
		return decided{err: err}
	}
	d, ferr := s.fallback.Decide(ctx, spec, item)
	if ferr != nil {
		return decided{err: fmt.Errorf("%w; the fallback failed too: %w", err, ferr)}
	}
	return decided{decision: d, fallback: true}
}

// budget tracks the walk over allowed items.
type budget struct {
	limits               Limits
	bytes, tokens, items int
	// stopReason and stopDetail are set once an item did not fit; every
	// allowed item after it gets them.
	stopReason, stopDetail string
}

// deliver redacts and measures an allowed item and fits it into the budget,
// filling v. An error means the item could not be prepared (an invalid
// redaction path, content that does not encode) and v is left for the
// caller to mark as a policy drop.
func (s *Slicer) deliver(item *h4r.Item, d h4r.Decision, v *Verdict, b *budget) error {
	// Fields are redacted whenever the policy names them, even with redact
	// false: of the two readings of that contradiction, hiding is the safe one.
	paths := d.RedactedFields
	if b.stopReason == "" && b.items >= b.limits.MaxItems {
		b.stopReason, b.stopDetail = h4r.ReasonBudgetItems, fmt.Sprintf("item budget of %d reached", b.limits.MaxItems)
	}
	if b.stopReason != "" {
		// The item is left out anyway, but a bad path is still the
		// policy's failure and is reported as such.
		for i, p := range paths {
			if _, err := ParsePath(p); err != nil {
				return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("redactedFields[%d]", i), "%s", h4r.ErrorMessage(err))
			}
		}
		v.Reason, v.Detail = b.stopReason, b.stopDetail
		return nil
	}

	delivered := item.Delivered()
	applied, err := Redact(&delivered, paths, s.marker)
	if err != nil {
		return err
	}
	v.Redacted, v.RedactedFields = len(applied) > 0, applied
	v.Bytes, v.Tokens, err = s.measure(item, delivered, v.Redacted, applied)
	if err != nil {
		return err
	}

	left := func(limit, used int) int { return max(limit-used, 0) }
	switch {
	case v.Bytes > b.limits.MaxBytes:
		v.Reason, v.Detail = h4r.ReasonBudgetBytes, fmt.Sprintf("needs %d bytes, more than the whole budget of %d", v.Bytes, b.limits.MaxBytes)
	case v.Tokens > b.limits.MaxTokens:
		v.Reason, v.Detail = h4r.ReasonBudgetTokens, fmt.Sprintf("needs %d tokens, more than the whole budget of %d", v.Tokens, b.limits.MaxTokens)
	case v.Bytes > b.limits.MaxBytes-b.bytes:
		v.Reason, v.Detail = h4r.ReasonBudgetBytes, fmt.Sprintf("needs %d bytes, %d of %d left", v.Bytes, left(b.limits.MaxBytes, b.bytes), b.limits.MaxBytes)
		b.stopReason, b.stopDetail = v.Reason, fmt.Sprintf("byte budget ran out at item %q", item.ID)
	case v.Tokens > b.limits.MaxTokens-b.tokens:
		v.Reason, v.Detail = h4r.ReasonBudgetTokens, fmt.Sprintf("needs %d tokens, %d of %d left", v.Tokens, left(b.limits.MaxTokens, b.tokens), b.limits.MaxTokens)
		b.stopReason, b.stopDetail = v.Reason, fmt.Sprintf("token budget ran out at item %q", item.ID)
	default:
		v.Reason, v.Delivered = h4r.ReasonKept, &delivered
		b.bytes += v.Bytes
		b.tokens += v.Tokens
		b.items++
	}
	return nil
}

// measure returns the delivered form's size in bytes and tokens. An
// unredacted item uses the sizes the store computed at ingest when it has
// them. A redacted item from a store (it has a version) is measured once
// per version, redaction paths and marker: the delivered form is a function
// of those, and counting its tokens exactly is the slicer's largest cost
// once decisions are cached.
func (s *Slicer) measure(item *h4r.Item, d h4r.Delivered, redacted bool, paths []string) (bytes, tokens int, err error) {
	if !redacted {
		bytes, tokens = item.Metadata.ByteSize, item.Metadata.Tokens
	}
	if bytes > 0 && tokens > 0 {
		return bytes, tokens, nil
	}
	var key sizeKey
	cacheable := redacted && s.sizes != nil && item.Metadata.Version > 0
	if cacheable {
		key = sizeKey{id: item.ID, version: item.Metadata.Version, paths: strings.Join(paths, "\x00"), marker: s.marker}
		if sz, ok := s.sizes.Get(key); ok {
			return sz[0], sz[1], nil
		}
	}
	encoded, err := d.Encode()
	if err != nil {
		return 0, 0, fmt.Errorf("measuring the delivered item: %w", err)
	}
	if bytes <= 0 {
		bytes = len(encoded)
	}
	if tokens <= 0 {
		tokens = s.counter.Count(string(encoded))
	}
	if cacheable {
		s.sizes.Add(key, [2]int{bytes, tokens})
	}
	return bytes, tokens, nil
}

// sizeKey identifies a redacted delivered form.
type sizeKey struct {
	id      string
	version int
	paths   string
	marker  string
}

// failing decides nothing: a Snapshotter that had no policy to give.
type failing struct{}

func (failing) Decide(context.Context, h4r.Specialist, *h4r.Item) (h4r.Decision, error) {
	return h4r.Decision{}, errors.New("no policy is loaded")
}
