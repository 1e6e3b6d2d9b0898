package scs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/sources"
)

// Decider makes the policy decision for one item. Implementations must be
// safe for concurrent use: Slice decides several items at once.
type Decider interface {
	Decide(ctx context.Context, spec h4r.Specialist, item *sources.Item) (policy.Decision, error)
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
	decider     Decider
	fallback    Decider
	counter     TokenCounter
	marker      string
	concurrency int
}

// Option configures a Slicer.
type Option func(*Slicer)

// WithFallback sets the Decider used for an item when the main decider
// fails (SCS_OPA_FALLBACK_LOCAL=true gives policy.LocalRules). nil, the
// default, fails closed: such items are dropped.
func WithFallback(d Decider) Option { return func(s *Slicer) { s.fallback = d } }

// WithRedactionMarker sets the string redacted values are replaced with
// (default "[REDACTED]").
func WithRedactionMarker(m string) Option { return func(s *Slicer) { s.marker = m } }

// WithConcurrency sets how many policy decisions one Slice makes at once
// (default GOMAXPROCS; 1 decides in order on the calling goroutine).
func WithConcurrency(n int) Option { return func(s *Slicer) { s.concurrency = max(n, 1) } }

// New returns a Slicer. decider and counter are required; New panics if
// either is nil, as that is a wiring mistake, not an input.
func New(decider Decider, counter TokenCounter, opts ...Option) *Slicer {
	if decider == nil || counter == nil {
		panic("scs.New: decider and counter must not be nil")
	}
	s := &Slicer{decider: decider, counter: counter, marker: DefaultRedactionMarker, concurrency: runtime.GOMAXPROCS(0)}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Outcome is the result of one Slice.
type Outcome struct {
	Verdicts []Verdict // one per input item, same order
	Stats    h4r.SlicingStats
	Warnings []string
}

// Verdict is what happened to one item.
type Verdict struct {
	Reason         string   // h4r.ReasonKept, h4r.ReasonPolicy, h4r.ReasonBudgetBytes/Tokens/Items
	Detail         string   // "policy: credentials", "policy error: …", "needs 2100 tokens, 900 of 30000 left"
	Redacted       bool     // some value was replaced
	RedactedFields []string // the paths that applied
	// Delivered is the item as delivered, set only when kept. Unless
	// Redacted, its Content is the input item's own map: read-only.
	Delivered *sources.Delivered
	// Bytes and Tokens measure the delivered form; zero for items the
	// budget walk did not reach (policy drops, items after it stopped).
	Bytes, Tokens int
	Fallback      bool // decided by the fallback Decider
}

// decided is one item's policy outcome before budgets.
type decided struct {
	decision policy.Decision
	err      error // no decision could be made
	fallback bool  // the fallback made the decision
}

// Slice decides every item (given in rank order) and fits the allowed ones
// into limits. See the package documentation for the rules.
func (s *Slicer) Slice(ctx context.Context, spec h4r.Specialist, items []*sources.Item, limits Limits) Outcome {
	out := Outcome{
		Verdicts: make([]Verdict, len(items)),
		Stats: h4r.SlicingStats{
			TotalCandidates: len(items),
			BudgetLimit:     h4r.BudgetUsage{Bytes: limits.MaxBytes, EstimatedTokens: limits.MaxTokens, Items: limits.MaxItems},
		},
	}
	if r, ok := s.decider.(revisioned); ok {
		out.Stats.PolicyRevision = r.Revision()
	}
	var bad *h4r.Error
	if errors.As(limits.Validate(), &bad) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s must be > 0: nothing can be delivered", bad.Field))
	}

	decisions := s.decideAll(ctx, spec, items)
	b := budget{limits: limits}
	var fellBack, failedClosed, badRedactions int
	for i, item := range items {
		v, d := &out.Verdicts[i], decisions[i]
		v.Fallback = d.fallback
		if d.fallback {
			fellBack++
		}
		switch {
		case d.err != nil:
			failedClosed++
			v.Reason, v.Detail = h4r.ReasonPolicy, "policy error: "+d.err.Error()
		case !d.decision.Allow:
			reason := d.decision.Reason
			if reason == "" {
				reason = "denied"
			}
			v.Reason, v.Detail = h4r.ReasonPolicy, "policy: "+reason
		default:
			if err := s.deliver(item, d.decision, v, &b); err != nil {
				*v = Verdict{Reason: h4r.ReasonPolicy, Fallback: d.fallback}
				var badPath *h4r.Error
				if errors.As(err, &badPath) {
					badRedactions++
					v.Detail = "policy error: " + badPath.Message
				} else {
					v.Detail = "cannot deliver: " + err.Error()
				}
			}
		}
		switch v.Reason {
		case h4r.ReasonKept:
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
	out.Stats.FallbackUsed = fellBack > 0
	if fellBack > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("policy evaluation failed for %d items; local fallback rules decided", fellBack))
	}
	if failedClosed > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("no policy decision could be made for %d items; they were left out", failedClosed))
	}
	if badRedactions > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the policy asked to redact an invalid path for %d items; they were left out", badRedactions))
	}
	return out
}

// decideAll makes every item's decision, s.concurrency at a time.
func (s *Slicer) decideAll(ctx context.Context, spec h4r.Specialist, items []*sources.Item) []decided {
	out := make([]decided, len(items))
	workers := min(s.concurrency, len(items))
	if workers <= 1 {
		for i, item := range items {
			out[i] = s.decide(ctx, spec, item)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				out[i] = s.decide(ctx, spec, items[i])
			}
		})
	}
	wg.Wait()
	return out
}

// decide asks the decider and, if it fails and a fallback is set, the
// fallback.
func (s *Slicer) decide(ctx context.Context, spec h4r.Specialist, item *sources.Item) decided {
	if item == nil {
		return decided{err: errors.New("no item (nil)")}
	}
	d, err := s.decider.Decide(ctx, spec, item)
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
func (s *Slicer) deliver(item *sources.Item, d policy.Decision, v *Verdict, b *budget) error {
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
	v.Bytes, v.Tokens, err = s.measure(item, delivered, v.Redacted)
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
// them.
func (s *Slicer) measure(item *sources.Item, d sources.Delivered, redacted bool) (bytes, tokens int, err error) {
	if !redacted {
		bytes, tokens = item.Metadata.ByteSize, item.Metadata.Tokens
	}
	if bytes > 0 && tokens > 0 {
		return bytes, tokens, nil
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
	return bytes, tokens, nil
}
