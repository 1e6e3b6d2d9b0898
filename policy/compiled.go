package policy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/h4r/h4r"
)

// Compiled predicates: per specialist (as the policy sees it), OPA
// partially evaluates the four decision keys with input.item unknown
// (partialModule, partialQuery); the
// residual (queries over input.item and the support rules they need) is
// compiled to Go closures (compiled_eval.go) that decide an item without
// running OPA's evaluator, several times faster on a cold item. A residual
// the compiler does not know, and any item it cannot decide, is evaluated
// by OPA as before, so the decisions (and errors) are the same.

// DefaultCompiledPredicates is how many compiled predicates (one per
// specialist as the policy sees it) an Engine keeps.
const DefaultCompiledPredicates = 256

// peNamespace is where partial evaluation puts its support rules.
const peNamespace = "h4r_partial"

// compileTimeout bounds one specialist's partial evaluation; a policy that
// takes longer is evaluated by OPA for that specialist.
const compileTimeout = 10 * time.Second

// WithCompiledPredicates sets how many compiled predicates the engine keeps,
// one per specialist as the policy sees it (the specialist fields its
// rules read), for this policy revision (default DefaultCompiledPredicates).
// 0 compiles none: every decision is made by OPA's evaluator. Policies
// that call non-deterministic built-ins or use `with` are never compiled.
func WithCompiledPredicates(n int) Option {
	return func(c *config) { c.predicates = max(n, 0) }
}

// CompiledStats counts the decisions made by compiled predicates and the
// ones that fell back to OPA (the item or the specialist's residual was
// beyond the compiler), since the engine was made.
type CompiledStats struct {
	Decided    uint64 `json:"decided"`
	FellBack   uint64 `json:"fellBack"`
	Predicates int    `json:"predicates"` // compiled or refused, in the LRU
}

// predicates is an Engine's compiled predicates and what it needs to make
// them.
type predicates struct {
	revision string
	needs    specialistNeeds
	compiler *ast.Compiler
	store    storage.Store
	cache    *lru.Cache[string, *predicateEntry]

	prepareOnce sync.Once
	prepared    rego.PreparedPartialQuery
	prepareErr  error

	decided, fellBack atomic.Uint64
}

type predicateEntry struct {
	once sync.Once
	prog *program // nil: OPA decides for this specialist
	err  error    // why prog is nil
}

// newPredicates returns nil when the policy cannot be compiled at all.
func newPredicates(size int, revision string, compiler *ast.Compiler, store storage.Store, user []*ast.Module) *predicates {
	if size <= 0 || usesWith(user) {
		return nil
	}
	cache, _ := lru.New[string, *predicateEntry](size) // errors only for a size <= 0
	return &predicates{revision: revision, needs: analyseSpecialist(user), compiler: compiler, store: store, cache: cache}
}

// usesWith reports whether a module replaces input or data with `with`:
// the specialist-fields analysis (analyseSpecialist) would not see through
// it.
func usesWith(modules []*ast.Module) bool {
	found := false
	for _, m := range modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if len(x.With) > 0 {
				found = true
			}
			return found
		})
	}
	return found
}

// program returns the specialist's compiled predicate, compiling it on
// first use; nil and the reason when OPA must decide.
func (p *predicates) program(ctx context.Context, spec h4r.Specialist) (*program, error) {
	key := p.revision + "\x00" + p.needs.key(spec)
	ent, ok := p.cache.Get(key)
	if !ok {
		ent = &predicateEntry{}
		if prev, found, _ := p.cache.PeekOrAdd(key, ent); found {
			ent = prev
		}
	}
	ent.once.Do(func() {
		// Not the request's context: a cancelled request must not leave
		// the specialist without a predicate for good.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), compileTimeout)
		defer cancel()
		ent.prog, ent.err = p.build(cctx, spec)
	})
	return ent.prog, ent.err
}

func (p *predicates) prepare(ctx context.Context) error {
	p.prepareOnce.Do(func() {
		p.prepared, p.prepareErr = rego.New(
			rego.Query(partialQuery()),
			rego.Compiler(p.compiler),
			rego.Store(p.store),
			rego.StrictBuiltinErrors(true),
			rego.SetRegoVersion(ast.RegoV1),
			rego.PartialNamespace(peNamespace),
			rego.Unknowns([]string{"input.item"}),
		).PrepareForPartial(ctx)
	})
	return p.prepareErr
}

// build partially evaluates the four decision keys for spec and compiles
// the residual.
func (p *predicates) build(ctx context.Context, spec h4r.Specialist) (*program, error) {
	if err := p.prepare(ctx); err != nil {
		return nil, fmt.Errorf("preparing partial evaluation: %w", err)
	}
	specTerm := ast.NewTerm(specialistValue(spec))
	input := ast.NewObject(ast.Item(ast.InternedTerm("specialist"), specTerm))
	pq, err := p.prepared.Partial(ctx,
		rego.EvalParsedInput(input),
		rego.EvalParsedUnknowns([]*ast.Term{ast.MustParseTerm("input.item")}),
		rego.EvalPartialNamespace(peNamespace),
	)
	if err != nil {
		return nil, fmt.Errorf("partially evaluating the policy: %w", err)
	}
	prog, err := compileProgram(pq, peNamespace, specTerm)
	if err != nil {
		return nil, fmt.Errorf("compiling the residual policy: %w", err)
	}
	return prog, nil
}

// CompiledFor says whether decisions for spec are made by a compiled
// predicate (nil) or by OPA's evaluator (an error saying why: compilation
// is off, the policy is non-deterministic or uses `with`, or its residual
// for this specialist uses what the compiler does not know). It compiles
// the predicate if need be.
func (e *Engine) CompiledFor(ctx context.Context, spec h4r.Specialist) error {
	if e.compiled == nil {
		return errors.New("compiled predicates are off for this policy (WithCompiledPredicates(0), a non-deterministic built-in, or `with`)")
	}
	_, err := e.compiled.program(ctx, spec)
	return err
}

// CompiledStats returns the counters of compiled decisions.
func (e *Engine) CompiledStats() CompiledStats {
	if e.compiled == nil {
		return CompiledStats{}
	}
	return CompiledStats{Decided: e.compiled.decided.Load(), FellBack: e.compiled.fellBack.Load(), Predicates: e.compiled.cache.Len()}
}

// decideCompiled decides one item with the specialist's compiled
// predicate; false: OPA must decide.
func (e *Engine) decideCompiled(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, bool) {
	if e.compiled == nil || item == nil {
		return h4r.Decision{}, false
	}
	prog, _ := e.compiled.program(ctx, spec)
	if prog == nil {
		return h4r.Decision{}, false
	}
	return e.runCompiled(ctx, prog, item)
}

func (e *Engine) runCompiled(ctx context.Context, prog *program, item *h4r.Item) (h4r.Decision, bool) {
	if !e.needs.plainInput(item) {
		e.compiled.fellBack.Add(1)
		return h4r.Decision{}, false
	}
	d, err := prog.decide(ctx, item)
	if err != nil {
		e.compiled.fellBack.Add(1)
		return h4r.Decision{}, false
	}
	e.compiled.decided.Add(1)
	return d, true
}

// decideBatchCompiled decides the items with the specialist's compiled
// predicate, and the ones it cannot with OPA, in one batch; false: OPA
// must decide them all.
func (e *Engine) decideBatchCompiled(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) ([]h4r.DecisionResult, bool) {
	if e.compiled == nil || len(items) == 0 || ctx.Err() != nil {
		return nil, false
	}
	prog, _ := e.compiled.program(ctx, spec)
	if prog == nil {
		return nil, false
	}
	out := make([]h4r.DecisionResult, len(items))
	var rest []*h4r.Item
	var restIdx []int
	for i, it := range items {
		if it != nil {
			if d, ok := e.runCompiled(ctx, prog, it); ok {
				out[i].Decision = d
				continue
			}
		}
		rest, restIdx = append(rest, it), append(restIdx, i)
	}
	if len(rest) > 0 {
		for j, r := range e.decideBatchOPA(ctx, spec, rest) {
			out[restIdx[j]] = r
		}
	}
	return out, true
}
