package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/h4r/h4r"
)

// This file turns the residual of a partial evaluation (queries over
// input.item, and the support rules they refer to) into Go closures, and
// runs them on an item. It knows a small subset of Rego: equality and
// unification that binds one variable, calls of pure built-ins (OPA's own
// implementations), refs into the item, the specialist, local variables and
// the support rules (complete rules with defaults, partial sets), iteration
// over collections, negation, and array and set comprehensions. Anything
// else fails the compilation, and the engine evaluates with OPA instead.
// At run time, anything unexpected (a built-in error, conflicting rule
// values, a decision of the wrong type) makes the item fall back to OPA,
// which then gives exactly the answer (or the error) it always gave.

// h4r.Decision keys, in the order of body.outs.
const (
	keyAllow = iota
	keyRedact
	keyRedactedFields
	keyReason
	numKeys
)

var decisionKeys = [numKeys]string{"allow", "redact", "redactedFields", "reason"}

// partialModule wraps each decision key in a partial set, always defined
// (empty when the key is undefined), so that one partial evaluation of one
// query covers all four keys and their support rules share one namespace.
const partialModule = `package h4r.internal.partial

allow contains v if v := data.cmo.context.allow

redact contains v if v := data.cmo.context.redact

redactedFields contains v if v := data.cmo.context.redactedFields

reason contains v if v := data.cmo.context.reason
`

const partialFile = "h4r/internal/partial.rego"

// resultVars are the query's variables, bound to the sets above.
var resultVars = [numKeys]ast.Var{"h4rallow", "h4rredact", "h4rredactedfields", "h4rreason"}

// partialQuery is the query partially evaluated per specialist.
func partialQuery() string {
	parts := make([]string, numKeys)
	for k, name := range decisionKeys {
		parts[k] = fmt.Sprintf("%s = data.h4r.internal.partial.%s", resultVars[k], name)
	}
	return strings.Join(parts, "; ")
}

// errFallback is the cause of every compiled evaluation that gives up.
var errFallback = errors.New("compiled policy cannot decide")

func fallback(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errFallback}, args...)...)
}

// errFound stops an enumeration at its first solution (negation).
var errFound = errors.New("found")

// program is one specialist's residual policy, compiled. It is immutable
// and safe for concurrent use; evalState holds one evaluation.
type program struct {
	// direct, when set, is each decision key's value read straight from
	// the rule that defines it (directKeys): no sets to build per item.
	direct *[numKeys]val
	query  []*body // the residual queries (a disjunction), binding resultVars
	rules  []*ruleSet
	inputs []inputSlot
	spec   *ast.Term // input.specialist
	frames int       // variables of all bodies: each has its own region
	states sync.Pool // of *evalState
}

// body is a compiled conjunction. Its variables live in its own region of
// the evaluation's frame arena: each body runs at most once per item (rule
// values are remembered, and Rego has no recursion), comprehensions in it
// share its region.
type body struct {
	steps  []step
	det    []detStep // det[i] is steps[i] when it has at most one solution
	allDet bool
	off, n int
	outs   [numKeys]int // slots of resultVars, in residual queries
}

type frame = []*ast.Term

type ruleSet struct {
	id    int
	path  string
	multi bool // a partial set (contains); else a complete rule
	rules []compiledRule
	def   *ast.Term // the default value; nil: none
}

type compiledRule struct {
	body  *body
	value val // the head's value (complete) or element (partial set)
}

// val computes a single-valued term: nil is undefined.
type val func(st *evalState, fr frame) (*ast.Term, error)

// gen enumerates the values of a term that binds variables (a ref with
// unbound indexes), calling k with each.
type gen func(st *evalState, fr frame, k func(*ast.Term) error) error

// step is one expression: run calls next once per solution.
type step interface {
	run(st *evalState, fr frame, next func() error) error
}

// detStep is a step with at most one solution: once says whether it holds
// (binding its variable, which is never read again unless re-bound).
type detStep interface {
	once(st *evalState, fr frame) (bool, error)
}

// Where input values come from, computed once per item when read.
type slotKind int

const (
	slotInput    slotKind = iota // input
	slotItem                     // input.item
	slotItemKey                  // input.item[key]
	slotMetadata                 // input.item.metadata[key]
)

type inputSlot struct {
	kind slotKind
	key  string
}

type evalState struct {
	ctx    context.Context
	prog   *program
	item   *h4r.Item
	rules  []ruleValue
	inputs []inputValue
	arena  []*ast.Term
	ops    []*ast.Term // a stack of built-in operands
	bctx   topdown.BuiltinContext
	// The output of the built-in being called (collect).
	out     *ast.Term
	outs    int
	collect func(*ast.Term) error
}

type ruleValue struct {
	done bool
	v    *ast.Term
}

type inputValue struct {
	done bool
	v    *ast.Term
}

func (p *program) state(ctx context.Context, item *h4r.Item) *evalState {
	st, _ := p.states.Get().(*evalState)
	if st == nil {
		st = &evalState{
			prog:   p,
			rules:  make([]ruleValue, len(p.rules)),
			inputs: make([]inputValue, len(p.inputs)),
			arena:  make([]*ast.Term, p.frames),
			ops:    make([]*ast.Term, 0, 16),
		}
		st.collect = func(t *ast.Term) error {
			st.out = t
			st.outs++
			return nil
		}
	}
	st.ctx, st.item, st.bctx = ctx, item, topdown.BuiltinContext{Context: ctx}
	return st
}

func (p *program) release(st *evalState) {
	clear(st.rules)
	clear(st.inputs)
	clear(st.arena)
	st.ops = st.ops[:0]
	st.ctx, st.item, st.out, st.bctx = nil, nil, nil, topdown.BuiltinContext{}
	p.states.Put(st)
}

// decide runs the program on one item. An error (always wrapping
// errFallback, or a cancelled context) means: ask OPA.
func (p *program) decide(ctx context.Context, item *h4r.Item) (d h4r.Decision, err error) {
	st := p.state(ctx, item)
	defer func() {
		if r := recover(); r != nil {
			err = fallback("panic: %v", r)
		}
		p.release(st)
	}()
	vals, err := st.query()
	if err != nil {
		return h4r.Decision{}, err
	}
	return decisionOf(vals)
}

// query returns the value of each decision key (nil: undefined): the one
// element of the set its residual binds.
func (st *evalState) query() ([numKeys]*ast.Term, error) {
	var vals [numKeys]*ast.Term
	if d := st.prog.direct; d != nil {
		for k, v := range d {
			var err error
			if vals[k], err = v(st, nil); err != nil {
				return vals, err
			}
		}
		return vals, nil
	}
	var sets [numKeys]*ast.Term
	solutions := 0
	for _, b := range st.prog.query {
		fr := st.frame(b)
		err := b.exec(st, fr, 0, func() error {
			for k, slot := range b.outs {
				v := fr[slot]
				switch {
				case v == nil:
					return fallback("the residual query leaves %s unbound", decisionKeys[k])
				case sets[k] == nil:
					sets[k] = v
				case !sets[k].Equal(v):
					return fallback("conflicting values %v and %v for %s", sets[k], v, decisionKeys[k])
				}
			}
			solutions++
			return nil
		})
		if err != nil {
			return sets, err
		}
	}
	if solutions == 0 {
		return sets, fallback("the residual query has no solution")
	}
	for k, t := range sets {
		set, ok := t.Value.(ast.Set)
		switch {
		case !ok:
			return vals, fallback("%s is %v, not a set", decisionKeys[k], t)
		case set.Len() > 1:
			return vals, fallback("%s has %d values", decisionKeys[k], set.Len())
		case set.Len() == 1:
			vals[k] = set.Slice()[0]
		}
	}
	return vals, nil
}

// decisionOf reads the four values as decodeDecision reads OPA's result,
// but gives up (rather than failing) on anything ill-typed, so that the
// error comes from the full evaluation.
func decisionOf(vals [numKeys]*ast.Term) (h4r.Decision, error) {
	d := h4r.Decision{RedactedFields: []string{}}
	allow, ok := termBool(vals[keyAllow])
	if !ok {
		return h4r.Decision{}, fallback("allow is %v", vals[keyAllow])
	}
	d.Allow = allow
	if t := vals[keyRedact]; t != nil {
		if d.Redact, ok = termBool(t); !ok {
			return h4r.Decision{}, fallback("redact is %v", t)
		}
	}
	if t := vals[keyRedactedFields]; t != nil {
		arr, ok := t.Value.(*ast.Array)
		if !ok {
			return h4r.Decision{}, fallback("redactedFields is %v", t)
		}
		for i := range arr.Len() {
			s, ok := arr.Elem(i).Value.(ast.String)
			if !ok {
				return h4r.Decision{}, fallback("redactedFields[%d] is %v", i, arr.Elem(i))
			}
			d.RedactedFields = append(d.RedactedFields, string(s))
		}
	}
	if t := vals[keyReason]; t != nil {
		s, ok := t.Value.(ast.String)
		if !ok {
			return h4r.Decision{}, fallback("reason is %v", t)
		}
		d.Reason = string(s)
	}
	return d, nil
}

func termBool(t *ast.Term) (bool, bool) {
	if t == nil {
		return false, false
	}
	b, ok := t.Value.(ast.Boolean)
	return bool(b), ok
}

func (st *evalState) frame(b *body) frame { return st.arena[b.off : b.off+b.n] }

// exec runs the steps from i, calling k once per solution.
func (b *body) exec(st *evalState, fr frame, i int, k func() error) error {
	for ; i < len(b.steps); i++ {
		d := b.det[i]
		if d == nil {
			break
		}
		ok, err := d.once(st, fr)
		if err != nil || !ok {
			return err
		}
	}
	if i == len(b.steps) {
		return k()
	}
	return b.steps[i].run(st, fr, func() error { return b.exec(st, fr, i+1, k) })
}

// holds runs a body of deterministic steps: whether it has its solution.
func (b *body) holds(st *evalState, fr frame) (bool, error) {
	for _, d := range b.det {
		if ok, err := d.once(st, fr); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// ruleValue is the support rule set's value for this item, computed once.
func (st *evalState) ruleValue(rs *ruleSet) (*ast.Term, error) {
	rv := &st.rules[rs.id]
	if rv.done {
		return rv.v, nil
	}
	acc := ruleAcc{rs: rs}
	for i := range rs.rules {
		r := &rs.rules[i]
		fr := st.frame(r.body)
		var err error
		if r.body.allDet {
			var ok bool
			if ok, err = r.body.holds(st, fr); err == nil && ok {
				err = acc.add(st, r, fr)
			}
		} else {
			acc, err = st.enumerate(acc, r, fr)
		}
		if err != nil {
			return nil, err
		}
	}
	out := acc.out
	switch {
	case rs.multi && acc.set == nil:
		out = emptySet
	case rs.multi:
		out = ast.NewTerm(acc.set)
	case out == nil:
		out = rs.def
	}
	rv.done, rv.v = true, out
	return out, nil
}

// emptySet is the value of a partial set no rule adds to; read-only.
var emptySet = ast.SetTerm()

// enumerate adds the values of a rule whose body may have many solutions.
// (A function of its own so that acc escapes only here.)
func (st *evalState) enumerate(acc ruleAcc, r *compiledRule, fr frame) (ruleAcc, error) {
	err := r.body.exec(st, fr, 0, func() error { return acc.add(st, r, fr) })
	return acc, err
}

// ruleAcc collects the values of one rule set's bodies.
type ruleAcc struct {
	rs  *ruleSet
	out *ast.Term
	set ast.Set
}

func (a *ruleAcc) add(st *evalState, r *compiledRule, fr frame) error {
	v, err := r.value(st, fr)
	switch {
	case err != nil:
		return err
	case v == nil:
		return fallback("rule %s has an undefined head", a.rs.path)
	case a.rs.multi:
		if a.set == nil {
			a.set = ast.NewSet()
		}
		a.set.Add(v)
	case a.out == nil:
		a.out = v
	case !a.out.Equal(v):
		return fallback("rule %s: conflicting values %v and %v", a.rs.path, a.out, v)
	}
	return nil
}

// input is the value of an input slot for this item, computed once.
func (st *evalState) input(i int) (*ast.Term, error) {
	iv := &st.inputs[i]
	if iv.done {
		return iv.v, nil
	}
	s := st.prog.inputs[i]
	var raw any
	found := true
	switch s.kind {
	case slotInput:
		item, err := ast.InterfaceToValue(itemInput(st.item))
		if err != nil {
			return nil, fallback("input.item: %v", err)
		}
		iv.done, iv.v = true, ast.ObjectTerm(ast.Item(ast.InternedTerm("specialist"), st.prog.spec), ast.Item(ast.InternedTerm("item"), ast.NewTerm(item)))
		return iv.v, nil
	case slotItem:
		raw = itemInput(st.item)
	case slotItemKey:
		switch s.key {
		case "id":
			raw = st.item.ID
		case "kind":
			raw = st.item.Kind
		case "text":
			raw = st.item.Text
		case "content":
			if raw = st.item.Content; st.item.Content == nil {
				raw = map[string]any{}
			}
		case "metadata":
			raw = metadataInput(st.item.Metadata)
		default:
			found = false
		}
	case slotMetadata:
		v, ok, err := metaTerm(&st.item.Metadata, s.key)
		if err != nil {
			return nil, fallback("input.item.metadata.%s: %v", s.key, err)
		}
		if ok {
			iv.v = v
		}
		iv.done = true
		return iv.v, nil
	}
	if found {
		v, err := ast.InterfaceToValue(raw)
		if err != nil {
			return nil, fallback("input.item %s: %v", s.key, err)
		}
		iv.v = ast.NewTerm(v)
	}
	iv.done = true
	return iv.v, nil
}

// ---- steps ----

// termStep: an expression that is a term holds if the term is defined and
// not false.
type termStep struct {
	v val // set when single-valued
	g gen
}

func notFalse(t *ast.Term) bool {
	b, ok := t.Value.(ast.Boolean)
	return !ok || bool(b)
}

func (s termStep) once(st *evalState, fr frame) (bool, error) {
	t, err := s.v(st, fr)
	return err == nil && t != nil && notFalse(t), err
}

func (s termStep) run(st *evalState, fr frame, next func() error) error {
	return s.g(st, fr, func(t *ast.Term) error {
		if !notFalse(t) {
			return nil
		}
		return next()
	})
}

// bindStep: x = t with x unbound.
type bindStep struct {
	slot int
	v    val // set when single-valued
	g    gen
}

func (s bindStep) once(st *evalState, fr frame) (bool, error) {
	t, err := s.v(st, fr)
	if err != nil || t == nil {
		return false, err
	}
	fr[s.slot] = t
	return true, nil
}

func (s bindStep) run(st *evalState, fr frame, next func() error) error {
	return s.g(st, fr, func(t *ast.Term) error {
		fr[s.slot] = t
		err := next()
		fr[s.slot] = nil
		return err
	})
}

// eqStep: a = b with both sides ground once evaluated.
type eqStep struct {
	va, vb val // set when both are single-valued
	a, b   gen
}

func (s eqStep) once(st *evalState, fr frame) (bool, error) {
	a, err := s.va(st, fr)
	if err != nil || a == nil {
		return false, err
	}
	b, err := s.vb(st, fr)
	if err != nil || b == nil {
		return false, err
	}
	return termsEqual(a, b), nil
}

func (s eqStep) run(st *evalState, fr frame, next func() error) error {
	return s.a(st, fr, func(a *ast.Term) error {
		return s.b(st, fr, func(b *ast.Term) error {
			if termsEqual(a, b) {
				return next()
			}
			return nil
		})
	})
}

// notStep: not expr.
type notStep struct{ inner step }

func (s notStep) once(st *evalState, fr frame) (bool, error) {
	if d, ok := s.inner.(detStep); ok && isDet(s.inner) {
		holds, err := d.once(st, fr)
		return err == nil && !holds, err
	}
	err := s.inner.run(st, fr, func() error { return errFound })
	switch {
	case errors.Is(err, errFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func (s notStep) run(st *evalState, fr frame, next func() error) error {
	ok, err := s.once(st, fr)
	if err != nil || !ok {
		return err
	}
	return next()
}

// callStep: a built-in call, its output compared (outVal), bound (outSlot
// >= 0) or, without one, required not to be false.
type callStep struct {
	fn      *builtin
	vals    []val // set when every operand is single-valued
	args    []gen
	outSlot int
	outVal  val
}

func (s callStep) once(st *evalState, fr frame) (bool, error) {
	base := len(st.ops)
	defer func() { st.ops = st.ops[:base] }()
	for _, a := range s.vals {
		t, err := a(st, fr)
		if err != nil || t == nil {
			return false, err
		}
		st.ops = append(st.ops, t)
	}
	out, err := s.fn.call(st, st.ops[base:])
	if err != nil || out == nil {
		return false, err
	}
	return s.output(st, fr, out)
}

// output handles the built-in's result: true if the step holds.
func (s callStep) output(st *evalState, fr frame, out *ast.Term) (bool, error) {
	switch {
	case s.outSlot >= 0:
		fr[s.outSlot] = out
		return true, nil
	case s.outVal != nil:
		want, err := s.outVal(st, fr)
		return err == nil && want != nil && termsEqual(want, out), err
	}
	return notFalse(out), nil
}

func (s callStep) run(st *evalState, fr frame, next func() error) error {
	ops := make([]*ast.Term, len(s.args))
	return s.eachArg(st, fr, ops, 0, func() error {
		out, err := s.fn.call(st, ops)
		if err != nil || out == nil {
			return err
		}
		ok, err := s.output(st, fr, out)
		if err != nil || !ok {
			return err
		}
		err = next()
		if s.outSlot >= 0 {
			fr[s.outSlot] = nil
		}
		return err
	})
}

func (s callStep) eachArg(st *evalState, fr frame, ops []*ast.Term, i int, k func() error) error {
	if i == len(s.args) {
		return k()
	}
	return s.args[i](st, fr, func(v *ast.Term) error {
		ops[i] = v
		return s.eachArg(st, fr, ops, i+1, k)
	})
}

// isDet reports whether a step has at most one solution.
func isDet(s step) bool {
	switch x := s.(type) {
	case termStep:
		return x.v != nil
	case bindStep:
		return x.v != nil
	case eqStep:
		return x.va != nil && x.vb != nil
	case callStep:
		return x.vals != nil || len(x.args) == 0
	case notStep:
		return true
	}
	return false
}

// builtin is a built-in the compiled predicates call: natively for the
// comparisons (the same order, ast.Compare, with a faster path for numbers
// that is proven equal), else OPA's own implementation.
type builtin struct {
	name   string
	opa    topdown.BuiltinFunc
	native func(ops []*ast.Term) *ast.Term
}

// call returns the built-in's one output (nil: undefined). An error of the
// built-in's own (with strict built-in errors, OPA fails the evaluation)
// gives up, as does more than one output.
func (b *builtin) call(st *evalState, ops []*ast.Term) (*ast.Term, error) {
	if b.native != nil {
		return b.native(ops), nil
	}
	st.out, st.outs = nil, 0
	if err := b.opa(st.bctx, ops, st.collect); err != nil {
		return nil, fallback("built-in %s: %v", b.name, err)
	}
	if st.outs > 1 {
		return nil, fallback("built-in %s gave %d values", b.name, st.outs)
	}
	return st.out, nil
}

var nativeBuiltins = map[string]func(ops []*ast.Term) *ast.Term{
	"gt":    func(o []*ast.Term) *ast.Term { return ast.InternedTerm(compareTerms(o[0], o[1]) > 0) },
	"gte":   func(o []*ast.Term) *ast.Term { return ast.InternedTerm(compareTerms(o[0], o[1]) >= 0) },
	"lt":    func(o []*ast.Term) *ast.Term { return ast.InternedTerm(compareTerms(o[0], o[1]) < 0) },
	"lte":   func(o []*ast.Term) *ast.Term { return ast.InternedTerm(compareTerms(o[0], o[1]) <= 0) },
	"equal": func(o []*ast.Term) *ast.Term { return ast.InternedTerm(termsEqual(o[0], o[1])) },
	"neq":   func(o []*ast.Term) *ast.Term { return ast.InternedTerm(!termsEqual(o[0], o[1])) },
}
