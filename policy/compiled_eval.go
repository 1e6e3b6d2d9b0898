package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/h4r/h4r/sources"
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

// Decision keys, in the order of body.outs.
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
	item   *sources.Item
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

func (p *program) state(ctx context.Context, item *sources.Item) *evalState {
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
func (p *program) decide(ctx context.Context, item *sources.Item) (d Decision, err error) {
	st := p.state(ctx, item)
	defer func() {
		if r := recover(); r != nil {
			err = fallback("panic: %v", r)
		}
		p.release(st)
	}()
	vals, err := st.query()
	if err != nil {
		return Decision{}, err
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
func decisionOf(vals [numKeys]*ast.Term) (Decision, error) {
	d := Decision{RedactedFields: []string{}}
	allow, ok := termBool(vals[keyAllow])
	if !ok {
		return Decision{}, fallback("allow is %v", vals[keyAllow])
	}
	d.Allow = allow
	if t := vals[keyRedact]; t != nil {
		if d.Redact, ok = termBool(t); !ok {
			return Decision{}, fallback("redact is %v", t)
		}
	}
	if t := vals[keyRedactedFields]; t != nil {
		arr, ok := t.Value.(*ast.Array)
		if !ok {
			return Decision{}, fallback("redactedFields is %v", t)
		}
		for i := range arr.Len() {
			s, ok := arr.Elem(i).Value.(ast.String)
			if !ok {
				return Decision{}, fallback("redactedFields[%d] is %v", i, arr.Elem(i))
			}
			d.RedactedFields = append(d.RedactedFields, string(s))
		}
	}
	if t := vals[keyReason]; t != nil {
		s, ok := t.Value.(ast.String)
		if !ok {
			return Decision{}, fallback("reason is %v", t)
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

// ---- compilation ----

// pureBuiltins are the built-ins a compiled predicate may call: OPA's own
// implementations, which depend only on their operands. Anything else
// (http.send, time.now_ns, print, opa.runtime, io.jwt.*, ...) leaves the
// specialist to full evaluation.
var pureBuiltins = map[string]bool{
	"equal": true, "neq": true, "lt": true, "gt": true, "lte": true, "gte": true,
	"internal.member_2": true, "internal.member_3": true,
	"count": true, "sum": true, "product": true, "max": true, "min": true, "sort": true,
	"plus": true, "minus": true, "mul": true, "div": true, "rem": true,
	"round": true, "ceil": true, "floor": true, "abs": true,
	"and": true, "or": true, "intersection": true, "union": true,
	"concat": true, "contains": true, "startswith": true, "endswith": true,
	"lower": true, "upper": true, "trim": true, "trim_space": true, "trim_prefix": true, "trim_suffix": true,
	"split": true, "replace": true, "substring": true, "indexof": true,
	"strings.any_prefix_match": true, "strings.any_suffix_match": true,
	"regex.match": true, "regex.is_valid": true, "glob.match": true,
	"array.concat": true, "array.slice": true, "array.reverse": true,
	"object.get": true, "object.keys": true,
	"is_string": true, "is_number": true, "is_boolean": true, "is_array": true,
	"is_set": true, "is_object": true, "is_null": true, "type_name": true,
	"to_number": true,
}

// compiler builds one program.
type compiler struct {
	prog      *program
	namespace ast.Ref                // data.<partial namespace>
	support   map[string][]*ast.Rule // the support rules by path
	sets      map[string]*ruleSet
	slots     map[inputSlot]int
	builtins  map[string]*builtin
}

// compileProgram compiles a partial evaluation of partialQuery. spec is
// input.specialist as the partial evaluation saw it.
func compileProgram(pq *rego.PartialQueries, namespace string, spec *ast.Term) (*program, error) {
	c := &compiler{
		prog:      &program{spec: spec},
		namespace: ast.MustParseRef("data." + namespace),
		support:   map[string][]*ast.Rule{},
		sets:      map[string]*ruleSet{},
		slots:     map[inputSlot]int{},
		builtins:  map[string]*builtin{},
	}
	for _, m := range pq.Support {
		for _, r := range m.Rules {
			path := m.Package.Path.Extend(r.Head.Ref()).String()
			c.support[path] = append(c.support[path], r)
		}
	}
	if len(pq.Queries) == 0 {
		return nil, errors.New("the residual query is always undefined")
	}
	if len(pq.Queries) == 1 {
		c.prog.direct = c.directKeys(pq.Queries[0])
	}
	for _, q := range pq.Queries {
		bc := newBodyCompiler(c)
		b, err := bc.body(q)
		if err != nil {
			return nil, err
		}
		for k, v := range resultVars {
			if !bc.bound[v] {
				return nil, fmt.Errorf("the residual query does not bind %s", decisionKeys[k])
			}
			b.outs[k] = bc.slots[v]
		}
		c.prog.query = append(c.prog.query, b)
	}
	return c.prog, nil
}

// directKeys recognises the usual residual: each result variable bound to
// a constant set (the key's value known for this specialist) or to the
// partialModule rule of its key, kept as a support rule that reads one
// value, `K contains v if { v = R }`. It returns how to read each key's
// value from R (or the constant) directly, or nil.
func (c *compiler) directKeys(q ast.Body) *[numKeys]val {
	if len(q) != numKeys {
		return nil
	}
	var out [numKeys]val
	for _, e := range q {
		if !e.IsEquality() || e.Negated || len(e.With) > 0 {
			return nil
		}
		terms := e.Terms.([]*ast.Term)
		a, b := terms[1], terms[2]
		if _, ok := a.Value.(ast.Var); !ok {
			a, b = b, a
		}
		av, _ := a.Value.(ast.Var)
		k := slices.Index(resultVars[:], av)
		if k < 0 || out[k] != nil {
			return nil
		}
		v, ok := c.directValue(b, decisionKeys[k])
		if !ok {
			return nil
		}
		out[k] = v
	}
	return &out
}

func (c *compiler) directValue(t *ast.Term, key string) (val, bool) {
	if set, ok := t.Value.(ast.Set); ok && set.IsGround() {
		switch set.Len() {
		case 0:
			return constVal(nil), true
		case 1:
			return constVal(set.Slice()[0]), true
		}
		return nil, false
	}
	want := append(slices.Clone(c.namespace), ast.StringTerm("h4r"), ast.StringTerm("internal"), ast.StringTerm("partial"), ast.StringTerm(key))
	if ref, ok := t.Value.(ast.Ref); !ok || !ref.Equal(want) {
		return nil, false
	}
	rules := c.support[want.String()]
	if len(rules) != 1 || rules[0].Default || rules[0].Head.DocKind() != ast.PartialSetDoc || len(rules[0].Body) != 1 {
		return nil, false
	}
	r := rules[0]
	v, ok := r.Head.Key.Value.(ast.Var)
	e := r.Body[0]
	if !ok || !e.IsEquality() || e.Negated || len(e.With) > 0 {
		return nil, false
	}
	terms := e.Terms.([]*ast.Term)
	src := terms[1]
	if terms[1].Value.Compare(v) == 0 {
		src = terms[2]
	} else if terms[2].Value.Compare(v) != 0 {
		return nil, false
	}
	if src.Vars().Contains(v) {
		return nil, false
	}
	bc := newBodyCompiler(c)
	read, err := bc.val(src)
	if err != nil || len(bc.slots) > 0 {
		return nil, false
	}
	return read, true
}

// ruleSet compiles the support rules at path (once).
func (c *compiler) ruleSet(path string) (*ruleSet, error) {
	if rs, ok := c.sets[path]; ok {
		if rs == nil {
			return nil, fmt.Errorf("rule %s refers to itself", path)
		}
		return rs, nil
	}
	rules := c.support[path]
	c.sets[path] = nil // guards against recursion while compiling
	rs := &ruleSet{path: path}
	for i, r := range rules {
		switch {
		case len(r.Head.Args) > 0:
			return nil, fmt.Errorf("rule %s is a function", path)
		case r.Else != nil:
			return nil, fmt.Errorf("rule %s has an else", path)
		case !r.Head.Ref().IsGround():
			return nil, fmt.Errorf("rule %s has a variable in its head", path)
		}
		multi := r.Head.DocKind() == ast.PartialSetDoc
		switch {
		case r.Head.DocKind() == ast.PartialObjectDoc:
			return nil, fmt.Errorf("rule %s is a partial object", path)
		case i > 0 && multi != rs.multi:
			return nil, fmt.Errorf("rule %s mixes kinds", path)
		}
		rs.multi = multi
		if r.Default {
			if multi || !r.Head.Value.IsGround() {
				return nil, fmt.Errorf("rule %s has an unusual default", path)
			}
			rs.def = r.Head.Value
			continue
		}
		bc := newBodyCompiler(c)
		b, err := bc.body(r.Body)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", path, err)
		}
		head := r.Head.Value
		if multi {
			head = r.Head.Key
		}
		v, err := bc.val(head)
		if err != nil {
			return nil, fmt.Errorf("rule %s head: %w", path, err)
		}
		bc.finish(b) // again: the head may hold a comprehension
		rs.rules = append(rs.rules, compiledRule{body: b, value: v})
	}
	rs.id = len(c.prog.rules)
	c.prog.rules = append(c.prog.rules, rs)
	c.sets[path] = rs
	return rs, nil
}

func (c *compiler) slot(s inputSlot) int {
	if i, ok := c.slots[s]; ok {
		return i
	}
	c.prog.inputs = append(c.prog.inputs, s)
	c.slots[s] = len(c.prog.inputs) - 1
	return len(c.prog.inputs) - 1
}

// bodyCompiler compiles the expressions of one rule body or residual
// query (and the comprehensions in it) into one frame of variables.
type bodyCompiler struct {
	c          *compiler
	slots      map[ast.Var]int
	bound      map[ast.Var]bool
	arrayDepth int // inside an array comprehension: iteration order shows
}

func newBodyCompiler(c *compiler) *bodyCompiler {
	return &bodyCompiler{c: c, slots: map[ast.Var]int{}, bound: map[ast.Var]bool{}}
}

func (bc *bodyCompiler) slot(v ast.Var) int {
	if i, ok := bc.slots[v]; ok {
		return i
	}
	bc.slots[v] = len(bc.slots)
	return bc.slots[v]
}

func (bc *bodyCompiler) body(q ast.Body) (*body, error) {
	b := &body{}
	for _, expr := range q {
		s, err := bc.expr(expr)
		if err != nil {
			return nil, err
		}
		b.steps = append(b.steps, s)
	}
	bc.finish(b)
	return b, nil
}

// finish gives the body its region of the frame arena (a new one if its
// variables grew since) and marks its deterministic steps.
func (bc *bodyCompiler) finish(b *body) {
	if b.n != len(bc.slots) || b.det == nil {
		b.off, b.n = bc.c.prog.frames, len(bc.slots)
		bc.c.prog.frames += b.n
	}
	b.det, b.allDet = detSteps(b.steps)
}

func detSteps(steps []step) ([]detStep, bool) {
	det := make([]detStep, len(steps))
	all := true
	for i, s := range steps {
		if isDet(s) {
			det[i] = s.(detStep)
		} else {
			all = false
		}
	}
	return det, all
}

func (bc *bodyCompiler) saveBound() map[ast.Var]bool {
	saved := make(map[ast.Var]bool, len(bc.bound))
	for k, v := range bc.bound {
		saved[k] = v
	}
	return saved
}

func (bc *bodyCompiler) expr(e *ast.Expr) (step, error) {
	switch {
	case len(e.With) > 0:
		return nil, fmt.Errorf("with in %v", e)
	}
	if e.Negated {
		// Variables bound inside a negation stay unbound outside it.
		saved := bc.saveBound()
		inner := e.Copy()
		inner.Negated = false
		s, err := bc.expr(inner)
		bc.bound = saved
		if err != nil {
			return nil, err
		}
		return notStep{inner: s}, nil
	}
	switch terms := e.Terms.(type) {
	case *ast.Term:
		v, g, err := bc.term(terms)
		if err != nil {
			return nil, err
		}
		return termStep{v: v, g: orGen(v, g)}, nil
	case []*ast.Term:
		if e.IsEquality() {
			return bc.unify(terms[1], terms[2])
		}
		return bc.call(terms)
	}
	return nil, fmt.Errorf("unsupported expression %v", e)
}

func (bc *bodyCompiler) unboundVar(t *ast.Term) (ast.Var, bool) {
	v, ok := t.Value.(ast.Var)
	if !ok || bc.bound[v] || v.Equal(ast.InputRootDocument.Value) || v.Equal(ast.DefaultRootDocument.Value) {
		return "", false
	}
	return v, true
}

func (bc *bodyCompiler) unify(a, b *ast.Term) (step, error) {
	if _, ok := bc.unboundVar(b); ok {
		a, b = b, a
	}
	if v, ok := bc.unboundVar(a); ok {
		if _, both := bc.unboundVar(b); both {
			return nil, fmt.Errorf("unifies two unbound variables %v = %v", a, b)
		}
		bv, bg, err := bc.term(b)
		if err != nil {
			return nil, err
		}
		bc.bound[v] = true
		return bindStep{slot: bc.slot(v), v: bv, g: orGen(bv, bg)}, nil
	}
	av, ag, err := bc.term(a)
	if err != nil {
		return nil, err
	}
	bv, bg, err := bc.term(b)
	if err != nil {
		return nil, err
	}
	s := eqStep{a: orGen(av, ag), b: orGen(bv, bg)}
	if ag == nil && bg == nil {
		s.va, s.vb = av, bv
	}
	return s, nil
}

func (bc *bodyCompiler) builtin(op *ast.Term) (*builtin, int, error) {
	ref, ok := op.Value.(ast.Ref)
	if !ok {
		return nil, 0, fmt.Errorf("call of %v", op)
	}
	name := ref.String()
	bi, known := ast.BuiltinMap[name]
	f := topdown.GetBuiltin(name)
	if !known || !pureBuiltins[name] || f == nil || bi.Decl.Result() == nil {
		return nil, 0, fmt.Errorf("call of %s", name)
	}
	b, ok := bc.c.builtins[name]
	if !ok {
		b = &builtin{name: name, opa: f, native: nativeBuiltins[name]}
		bc.c.builtins[name] = b
	}
	return b, bi.Decl.Arity(), nil
}

func (bc *bodyCompiler) call(terms []*ast.Term) (step, error) {
	fn, arity, err := bc.builtin(terms[0])
	if err != nil {
		return nil, err
	}
	args := terms[1:]
	if len(args) != arity && len(args) != arity+1 {
		return nil, fmt.Errorf("%s with %d arguments", fn.name, len(args))
	}
	s := callStep{fn: fn, outSlot: -1}
	det := true
	for _, a := range args[:arity] {
		v, g, err := bc.term(a)
		if err != nil {
			return nil, err
		}
		det = det && g == nil
		s.vals = append(s.vals, v)
		s.args = append(s.args, orGen(v, g))
	}
	if !det {
		s.vals = nil
	}
	if len(args) == arity {
		return s, nil
	}
	out := args[arity]
	if v, ok := bc.unboundVar(out); ok {
		bc.bound[v] = true
		s.outSlot = bc.slot(v)
		return s, nil
	}
	if s.outVal, err = bc.val(out); err != nil {
		return nil, err
	}
	return s, nil
}

// val compiles a term that must be single-valued.
func (bc *bodyCompiler) val(t *ast.Term) (val, error) {
	v, g, err := bc.term(t)
	switch {
	case err != nil:
		return nil, err
	case g != nil:
		return nil, fmt.Errorf("%v enumerates where one value is needed", t)
	}
	return v, nil
}

// orGen returns g, or v as a gen of its one value.
func orGen(v val, g gen) gen {
	if g != nil {
		return g
	}
	return func(st *evalState, fr frame, k func(*ast.Term) error) error {
		x, err := v(st, fr)
		if err != nil || x == nil {
			return err
		}
		return k(x)
	}
}

func constVal(t *ast.Term) val {
	return func(*evalState, frame) (*ast.Term, error) { return t, nil }
}

// term compiles t into a val, or a gen when it binds variables.
func (bc *bodyCompiler) term(t *ast.Term) (val, gen, error) {
	switch x := t.Value.(type) {
	case ast.Null, ast.Boolean, ast.Number, ast.String:
		return constVal(t), nil, nil
	case ast.Var:
		if x.Equal(ast.InputRootDocument.Value) {
			i := bc.c.slot(inputSlot{kind: slotInput})
			return func(st *evalState, _ frame) (*ast.Term, error) { return st.input(i) }, nil, nil
		}
		if !bc.bound[x] {
			return nil, nil, fmt.Errorf("unbound variable %v", x)
		}
		i := bc.slot(x)
		return func(_ *evalState, fr frame) (*ast.Term, error) {
			if fr[i] == nil {
				return nil, fallback("variable %v read unbound", x)
			}
			return fr[i], nil
		}, nil, nil
	case ast.Ref:
		return bc.ref(x)
	case *ast.Array, ast.Object, ast.Set:
		if t.IsGround() {
			return constVal(t), nil, nil
		}
		return bc.composite(t)
	case ast.Call:
		v, err := bc.callTerm(x)
		return v, nil, err
	case *ast.ArrayComprehension:
		bc.arrayDepth++
		v, err := bc.comprehension(x.Body, x.Term, false)
		bc.arrayDepth--
		return v, nil, err
	case *ast.SetComprehension:
		v, err := bc.comprehension(x.Body, x.Term, true)
		return v, nil, err
	}
	return nil, nil, fmt.Errorf("unsupported term %v (%T)", t, t.Value)
}

// composite builds an array, set or object literal with variables or refs
// inside; every part must be single-valued.
func (bc *bodyCompiler) composite(t *ast.Term) (val, gen, error) {
	var parts []val
	var err error
	add := func(e *ast.Term) {
		if err == nil {
			var v val
			v, err = bc.val(e)
			parts = append(parts, v)
		}
	}
	switch x := t.Value.(type) {
	case *ast.Array:
		x.Foreach(add)
	case ast.Set:
		x.Foreach(add)
	case ast.Object:
		x.Foreach(func(k, v *ast.Term) { add(k); add(v) })
	}
	if err != nil {
		return nil, nil, err
	}
	eval := func(st *evalState, fr frame) ([]*ast.Term, error) {
		out := make([]*ast.Term, len(parts))
		for i, p := range parts {
			v, err := p(st, fr)
			if err != nil || v == nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	switch t.Value.(type) {
	case *ast.Array:
		return func(st *evalState, fr frame) (*ast.Term, error) {
			elems, err := eval(st, fr)
			if err != nil || elems == nil && len(parts) > 0 {
				return nil, err
			}
			return ast.ArrayTerm(elems...), nil
		}, nil, nil
	case ast.Set:
		return func(st *evalState, fr frame) (*ast.Term, error) {
			elems, err := eval(st, fr)
			if err != nil || elems == nil && len(parts) > 0 {
				return nil, err
			}
			return ast.SetTerm(elems...), nil
		}, nil, nil
	}
	return func(st *evalState, fr frame) (*ast.Term, error) {
		kv, err := eval(st, fr)
		if err != nil || kv == nil && len(parts) > 0 {
			return nil, err
		}
		obj := ast.NewObject()
		for i := 0; i < len(kv); i += 2 {
			if have := obj.Get(kv[i]); have != nil && !have.Equal(kv[i+1]) {
				return nil, fallback("object literal with conflicting key %v", kv[i])
			}
			obj.Insert(kv[i], kv[i+1])
		}
		return ast.NewTerm(obj), nil
	}, nil, nil
}

// callTerm is a call nested in another expression: its one output.
func (bc *bodyCompiler) callTerm(call ast.Call) (val, error) {
	fn, arity, err := bc.builtin(call[0])
	if err != nil {
		return nil, err
	}
	if len(call)-1 != arity {
		return nil, fmt.Errorf("nested %s with %d arguments", fn.name, len(call)-1)
	}
	args := make([]val, arity)
	for i, a := range call[1:] {
		if args[i], err = bc.val(a); err != nil {
			return nil, err
		}
	}
	return func(st *evalState, fr frame) (*ast.Term, error) {
		base := len(st.ops)
		defer func() { st.ops = st.ops[:base] }()
		for _, a := range args {
			v, err := a(st, fr)
			if err != nil || v == nil {
				return nil, err
			}
			st.ops = append(st.ops, v)
		}
		return fn.call(st, st.ops[base:])
	}, nil
}

func (bc *bodyCompiler) comprehension(q ast.Body, head *ast.Term, set bool) (val, error) {
	saved := bc.saveBound()
	steps := make([]step, 0, len(q))
	for _, e := range q {
		s, err := bc.expr(e)
		if err != nil {
			bc.bound = saved
			return nil, err
		}
		steps = append(steps, s)
	}
	h, err := bc.val(head)
	bc.bound = saved
	if err != nil {
		return nil, err
	}
	b := &body{steps: steps}
	b.det, b.allDet = detSteps(steps)
	return func(st *evalState, fr frame) (*ast.Term, error) {
		var elems []*ast.Term
		err := b.exec(st, fr, 0, func() error {
			v, err := h(st, fr)
			if err != nil {
				return err
			}
			if v == nil {
				return fallback("comprehension head %v undefined", head)
			}
			elems = append(elems, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if set {
			return ast.SetTerm(elems...), nil
		}
		return ast.ArrayTerm(elems...), nil
	}, nil
}

// ref compiles a reference: its base (input, a support rule, a local
// variable or another term) and the path below it.
func (bc *bodyCompiler) ref(ref ast.Ref) (val, gen, error) {
	var base val
	var rest ast.Ref
	head := ref[0]
	switch {
	case head.Equal(ast.InputRootDocument):
		base, rest = bc.inputRef(ref)
	case head.Equal(ast.DefaultRootDocument):
		var rs *ruleSet
		var err error
		rs, rest, err = bc.dataRef(ref)
		if err != nil {
			return nil, nil, err
		}
		if rs.multi && bc.arrayDepth > 0 && !rest.IsGround() {
			// OPA enumerates a partial set in rule order, not sorted.
			return nil, nil, fmt.Errorf("iterates partial set %s in an array comprehension", rs.path)
		}
		base = func(st *evalState, _ frame) (*ast.Term, error) { return st.ruleValue(rs) }
	default:
		v, err := bc.val(head)
		if err != nil {
			return nil, nil, err
		}
		base, rest = v, ref[1:]
	}
	return bc.path(base, rest)
}

// inputRef: input.item.metadata.K, input.item.K and the rest are slots,
// read from the item when first needed; input.specialist is a constant.
func (bc *bodyCompiler) inputRef(ref ast.Ref) (val, ast.Ref) {
	str := func(i int) (string, bool) {
		if i >= len(ref) {
			return "", false
		}
		s, ok := ref[i].Value.(ast.String)
		return string(s), ok
	}
	fromSlot := func(s inputSlot) val {
		i := bc.c.slot(s)
		return func(st *evalState, _ frame) (*ast.Term, error) { return st.input(i) }
	}
	top, ok := str(1)
	switch {
	case ok && top == "specialist":
		spec := bc.c.prog.spec
		return constVal(spec), ref[2:]
	case ok && top == "item":
		key, ok := str(2)
		if !ok {
			return fromSlot(inputSlot{kind: slotItem}), ref[2:]
		}
		if mk, ok := str(3); ok && key == "metadata" {
			return fromSlot(inputSlot{kind: slotMetadata, key: mk}), ref[4:]
		}
		return fromSlot(inputSlot{kind: slotItemKey, key: key}), ref[3:]
	}
	return fromSlot(inputSlot{kind: slotInput}), ref[1:]
}

// dataRef finds the support rule a data ref names and the path below it.
// Any other data (a base document, a package, a rule the partial
// evaluation left unresolved) fails the compilation.
func (bc *bodyCompiler) dataRef(ref ast.Ref) (*ruleSet, ast.Ref, error) {
	if len(ref) < 3 || !ref[:2].Equal(bc.c.namespace) {
		return nil, nil, fmt.Errorf("reads %v", ref)
	}
	for n := len(ref); n > 2; n-- {
		prefix := ref[:n]
		if !prefix.IsGround() {
			continue
		}
		if _, ok := bc.c.support[prefix.String()]; ok {
			rs, err := bc.c.ruleSet(prefix.String())
			return rs, ref[n:], err
		}
	}
	return nil, nil, fmt.Errorf("reads %v, which is no rule", ref)
}

// path indexes base with each term of rest: constants and bound variables
// look up, unbound variables enumerate (and bind).
func (bc *bodyCompiler) path(base val, rest ast.Ref) (val, gen, error) {
	if len(rest) == 0 {
		return base, nil, nil
	}
	type part struct {
		key  val
		slot int // >= 0: an unbound variable, bound by enumeration
	}
	parts := make([]part, len(rest))
	enumerates := false
	for i, t := range rest {
		if v, ok := bc.unboundVar(t); ok {
			bc.bound[v] = true
			parts[i] = part{slot: bc.slot(v)}
			enumerates = true
			continue
		}
		k, err := bc.val(t)
		if err != nil {
			return nil, nil, err
		}
		parts[i] = part{key: k, slot: -1}
	}
	if !enumerates {
		return func(st *evalState, fr frame) (*ast.Term, error) {
			v, err := base(st, fr)
			for _, p := range parts {
				if err != nil || v == nil {
					return nil, err
				}
				var k *ast.Term
				if k, err = p.key(st, fr); k == nil {
					return nil, err
				}
				v = v.Get(k)
			}
			return v, err
		}, nil, nil
	}
	var walk func(st *evalState, fr frame, v *ast.Term, i int, k func(*ast.Term) error) error
	walk = func(st *evalState, fr frame, v *ast.Term, i int, k func(*ast.Term) error) error {
		if i == len(parts) {
			return k(v)
		}
		p := parts[i]
		if p.slot < 0 {
			key, err := p.key(st, fr)
			if err != nil || key == nil {
				return err
			}
			next := v.Get(key)
			if next == nil {
				return nil
			}
			return walk(st, fr, next, i+1, k)
		}
		bind := func(key, elem *ast.Term) error {
			fr[p.slot] = key
			err := walk(st, fr, elem, i+1, k)
			fr[p.slot] = nil
			return err
		}
		switch c := v.Value.(type) {
		case *ast.Array:
			for j := range c.Len() {
				if err := bind(ast.InternedTerm(j), c.Elem(j)); err != nil {
					return err
				}
			}
		case ast.Object:
			for _, key := range c.Keys() {
				if err := bind(key, c.Get(key)); err != nil {
					return err
				}
			}
		case ast.Set:
			for _, elem := range c.Slice() {
				if err := bind(elem, elem); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return nil, func(st *evalState, fr frame, k func(*ast.Term) error) error {
		v, err := base(st, fr)
		if err != nil || v == nil {
			return err
		}
		return walk(st, fr, v, 0, k)
	}, nil
}

// describeResidual prints the residual queries and support rules, for
// tests and debugging.
func describeResidual(pq *rego.PartialQueries) string {
	var b strings.Builder
	for _, q := range pq.Queries {
		fmt.Fprintf(&b, "query: %v\n", q)
	}
	for _, m := range pq.Support {
		fmt.Fprintf(&b, "%v\n", m)
	}
	return b.String()
}
