package policy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Compilation of a residual policy into a program (compiled_eval.go runs
// it). Compile-time analysis decides, expression by expression, which
// variables are bound, so that a step knows whether it tests, binds or
// enumerates; anything outside the subset fails the compilation.

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
	"to_number": true, "sprintf": true,
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
func (c *compiler) ruleSet(path string) (rs *ruleSet, err error) {
	if rs, ok := c.sets[path]; ok {
		if rs == nil {
			return nil, fmt.Errorf("rule %s refers to itself", path)
		}
		return rs, nil
	}
	rules := c.support[path]
	c.sets[path] = nil // guards against recursion while compiling
	defer func() {
		if err != nil {
			delete(c.sets, path) // so that a second attempt says why again
		}
	}()
	rs = &ruleSet{path: path}
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
