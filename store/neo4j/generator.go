package neo4j

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j/internal/cypher"
)

// Names in FallbackError.
const (
	PrimaryName  = "neo4j"
	FallbackName = "store CTE"
)

// defaultLimit is the store's graph default, so that both answer alike.
const defaultLimit = 500

// Hopper walks the graph (*Client).
type Hopper interface {
	Hops(ctx context.Context, q HopQuery) ([]Reach, error)
}

// ItemReader reads items from the store, the source of truth: hops in
// Neo4j give ids and distances, the items come from the store.
type ItemReader interface {
	Get(ctx context.Context, id string) (*h4r.Item, error)
}

// Generator is the causal-hop generator over Neo4j. When Neo4j fails or is
// late, the fallback (the store's walk) answers, and Generate
// returns its hits with a *h4r.FallbackError, which the engine reports
// as a warning.
type Generator struct {
	hops     Hopper
	items    ItemReader
	fallback h4r.Generator
	log      *slog.Logger
	types    []string
	timeout  time.Duration
	maxReach int
}

// NewGenerator returns the generator. It reads WithLinkTypes,
// WithPrimaryTimeout, WithMaxReach and WithLogger.
func NewGenerator(hops Hopper, items ItemReader, fallback h4r.Generator, opts ...Option) *Generator {
	o := newOptions(opts)
	return &Generator{hops: hops, items: items, fallback: fallback, log: o.log,
		types: o.linkTypes, timeout: o.primaryTimeout, maxReach: max(o.maxReach, 1)}
}

// Name is the graph generator's name: Neo4j replaces the store's walk.
func (g *Generator) Name() string { return h4r.GenGraph }

// Generate returns the items within q.MaxHops links of q.Anchors (default
// h4r.DefaultMaxHops), each once at its smallest distance, ordered by
// distance then id, filtered and limited: what the store's walk returns.
func (g *Generator) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, maxHops, err := h4r.HopBounds(q, defaultLimit, cypher.MaxHops)
	if err != nil {
		return nil, err
	}
	flt, err := compileFilter(q.Filters)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	// The fallback walks the same links: the types configured and asked.
	q.LinkTypes = linkTypes(g.types, q.LinkTypes)
	hits, err := g.primary(ctx, q, maxHops, limit, flt)
	if err == nil {
		return hits, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("neo4j hops: %w", err)
	}
	var tooMany *tooManyError
	if errors.As(err, &tooMany) {
		// Not a failure: the store's walk filters as it goes.
		g.log.InfoContext(ctx, "a filtered hop query reached more items than neo4j returns for filtering; the store answers", "max_reach", tooMany.n)
		return g.fallback.Generate(ctx, q)
	}
	fallbackHits, ferr := g.fallback.Generate(ctx, q)
	if ferr != nil {
		return nil, fmt.Errorf("neo4j hops failed (%w), and so did the %s: %w", err, FallbackName, ferr)
	}
	return fallbackHits, &h4r.FallbackError{Primary: PrimaryName, Fallback: FallbackName, Err: err}
}

// tooManyError says a filtered walk reached more items than WithMaxReach.
type tooManyError struct{ n int }

func (e *tooManyError) Error() string { return fmt.Sprintf("the walk reached more than %d items", e.n) }

// primary answers from Neo4j under its own deadline, leaving the rest of
// ctx's time to the fallback.
func (g *Generator) primary(ctx context.Context, q h4r.CandidateQuery, maxHops, limit int, flt *filter) ([]h4r.Hit, error) {
	pctx, budget, cancel := g.primaryContext(ctx)
	defer cancel()
	// Without filters Neo4j applies the limit; with them it cannot (the
	// graph does not hold what they test), so it returns up to maxReach
	// and one more, which tells that there were more.
	rows := limit
	if !q.Filters.Empty() {
		rows = g.maxReach + 1
	}
	reached, err := g.hops.Hops(pctx, HopQuery{Anchors: q.Anchors, MaxHops: maxHops, Directed: q.Directed,
		Types: q.LinkTypes, Targets: q.Targets, Limit: rows})
	if err != nil {
		if pctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %s: %w", budget.Round(time.Millisecond), err)
		}
		return nil, err
	}
	if !q.Filters.Empty() && len(reached) > g.maxReach {
		return nil, &tooManyError{n: g.maxReach}
	}
	hits := make([]h4r.Hit, 0, min(len(reached), limit))
	for _, r := range reached {
		if len(hits) == limit {
			break
		}
		it, err := g.items.Get(ctx, r.ID)
		if h4r.ErrorCode(err) == h4r.ENOTFOUND {
			continue // deleted from the store; the mirror has not caught up yet
		}
		if err != nil {
			return nil, fmt.Errorf("reading hop item %q from the store: %w", r.ID, err)
		}
		ok, err := flt.match(it)
		if err != nil {
			return nil, err
		}
		if ok {
			hits = append(hits, h4r.Hit{Item: it, Distance: r.Distance})
		}
	}
	return hits, nil
}

// primaryContext returns the context Neo4j is asked under and how long it
// has.
func (g *Generator) primaryContext(ctx context.Context) (context.Context, time.Duration, context.CancelFunc) {
	budget := g.timeout
	if budget <= 0 {
		deadline, ok := ctx.Deadline()
		if !ok {
			c, cancel := context.WithCancel(ctx)
			return c, 0, cancel
		}
		budget = time.Until(deadline) / 2
	}
	c, cancel := context.WithTimeout(ctx, budget)
	return c, budget, cancel
}

// linkTypes returns the link types a walk follows: those both configured
// (WithLinkTypes) and asked for, when both restrict them; empty: every
// type. When none is both, it is a type no link has (links have non-blank
// types), so that the walk, here or in the fallback, follows none.
func linkTypes(configured, asked []string) []string {
	switch {
	case len(configured) == 0:
		return asked
	case len(asked) == 0:
		return configured
	}
	var both []string
	for _, t := range asked {
		if slices.Contains(configured, t) && !slices.Contains(both, t) {
			both = append(both, t)
		}
	}
	if len(both) == 0 {
		return []string{""}
	}
	return both
}
