package policy

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/h4r/h4r"
)

// Package and query of every H4R policy.
const (
	PackagePath = "data.cmo.context"
	// SourceBundled is Engine.Source for the embedded default policy.
	SourceBundled = "bundled"
	// SourceModules is Engine.Source for modules given with WithModules only.
	SourceModules = "modules"
)

//go:embed rego/context.rego
var bundledPolicy string

// decisionModule reads the four decision keys out of data.cmo.context.
// Querying the whole package document would evaluate every helper rule and
// copy every value it holds (the item's metadata, say) on each decision,
// several times slower; an undefined key is simply absent here, as it would
// be in the package document.
const decisionModule = `package h4r.internal.decision

allow := data.cmo.context.allow

redact := data.cmo.context.redact

redactedFields := data.cmo.context.redactedFields

reason := data.cmo.context.reason
`

// batchModule decides every candidate of a request in one evaluation: the
// per-item decision, with input replaced by {specialist, item} for each
// item in turn. The policy is still written per item.
const batchModule = `package h4r.internal.batch

decisions := [d |
	some item in input.items
	d := data.h4r.internal.decision with input as {"specialist": input.specialist, "item": item}
]
`

const (
	decisionFile  = "h4r/internal/decision.rego"
	decisionQuery = "data.h4r.internal.decision"
	batchFile     = "h4r/internal/batch.rego"
	batchQuery    = "data.h4r.internal.batch.decisions"
	packQuery     = PackagePath + ".pack"
)

// BundledFile is the name the default policy is compiled under; compile and
// evaluation errors point into it.
const BundledFile = "rego/context.rego"

// Engine is a compiled policy with its queries prepared: per item, for a
// whole batch of items, and for pack-level settings. It is immutable and
// safe for concurrent use.
type Engine struct {
	item     rego.PreparedEvalQuery
	batch    rego.PreparedEvalQuery
	pack     *rego.PreparedEvalQuery // nil: the policy has no pack rule
	revision string
	source   string
	files    []File
	needs    itemNeeds
	// memo: the policy calls no non-deterministic built-in, so equal
	// inputs get equal decisions: decided once per batch, and remembered
	// in decisions across requests.
	memo      bool
	decisions *lru.Cache[string, h4r.Decision] // by specialist and input as the policy sees it; nil unless memo
	compiled  *predicates                      // compiled predicates per specialist (compiled.go); nil: off
}

// DefaultDecisionMemo is how many decisions an Engine remembers by input.
const DefaultDecisionMemo = 50_000

// Option configures New.
type Option func(*config)

type config struct {
	path       string
	modules    map[string]string
	memo       int
	predicates int
	network    bool
}

// WithPolicyDir loads the policy at path instead of the bundled policy:
// every *.rego file under a directory (recursively, skipping *_test.rego),
// or an OPA bundle (.tar.gz) with its modules and data. The modules must
// be Rego v1 and one of them must declare package cmo.context with an
// allow rule.
func WithPolicyDir(path string) Option {
	return func(c *config) { c.path = path }
}

// WithModules adds Rego modules, filename to source, instead of the bundled
// policy (or on top of WithPolicyDir's files). Tests use it.
func WithModules(files map[string]string) Option {
	return func(c *config) {
		if c.modules == nil {
			c.modules = map[string]string{}
		}
		for name, src := range files {
			c.modules[name] = src
		}
	}
}

// WithDecisionMemo sets how many decisions the engine remembers by
// specialist and input as the policy sees it (default DefaultDecisionMemo;
// 0 remembers none). A deterministic policy decides equal inputs alike, so
// a remembered decision is exact: it never goes stale within a revision.
// Policies that call non-deterministic built-ins remember nothing.
func WithDecisionMemo(n int) Option {
	return func(c *config) { c.memo = max(n, 0) }
}

// WithNetworkBuiltins lets the policy call the built-ins that reach the
// network or the process environment (NetworkBuiltins: http.send, …),
// SCS_POLICY_NETWORK. Without it, the default, a policy that calls one does
// not compile.
func WithNetworkBuiltins(allow bool) Option {
	return func(c *config) { c.network = allow }
}

// NetworkBuiltins returns the built-ins an embedded policy may call only
// with WithNetworkBuiltins: they reach the network (http.send,
// net.lookup_ip_addr) or hand out the process's environment and
// configuration (opa.runtime). A decision is to depend on the item and the
// specialist, not on what a policy file can fetch or read, and a policy
// must not be a way to send either out of the process.
func NetworkBuiltins() []string {
	return []string{"http.send", "net.lookup_ip_addr", "opa.runtime"}
}

// New compiles the policy and prepares its queries. A file that does not
// parse or compile is an invalid_argument error whose field is the file and
// whose message has OPA's file:line:column lines; so is a policy that
// declares no package cmo.context or no allow rule.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	cfg := config{memo: DefaultDecisionMemo, predicates: DefaultCompiledPredicates}
	for _, opt := range opts {
		opt(&cfg)
	}
	files, data, source, err := cfg.files()
	if err != nil {
		return nil, err
	}
	return compile(ctx, files, data, source, cfg)
}

// files returns the modules to compile, sorted by key, the data document
// and the policy's source for Engine.Source.
func (c config) files() ([]File, map[string]any, string, error) {
	var files []File
	var data map[string]any
	source := SourceBundled
	switch {
	case c.path != "":
		source = c.path
		found, d, err := Load(c.path, false)
		if err != nil {
			return nil, nil, "", err
		}
		files, data = found, d
	case len(c.modules) > 0:
		source = SourceModules
	default:
		files = []File{{Name: BundledFile, Key: BundledFile, Source: bundledPolicy}}
	}
	for name, src := range c.modules {
		files = append(files, File{Name: name, Key: name, Source: src})
	}
	slices.SortFunc(files, func(a, b File) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return files, data, source, nil
}

func compile(ctx context.Context, files []File, data map[string]any, source string, cfg config) (*Engine, error) {
	modules := make(map[string]*ast.Module, len(files)+2)
	var hasPackage, hasAllow, hasPack bool
	for _, f := range files {
		mod, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, compileError(f.Name, "parsing policy", err)
		}
		if !cfg.network {
			if err := refuseNetwork(mod); err != nil {
				return nil, err
			}
		}
		if mod.Package.Path.String() == PackagePath {
			hasPackage = true
			for _, r := range mod.Rules {
				switch r.Head.Ref().String() {
				case "allow":
					hasAllow = true
				case "pack":
					hasPack = true
				}
			}
		}
		modules[f.Name] = mod
	}
	switch {
	case !hasPackage:
		return nil, h4r.Errorf(h4r.EINVALID, "policy", "policy from %s declares no package cmo.context", source)
	case !hasAllow:
		return nil, h4r.Errorf(h4r.EINVALID, "policy", "policy from %s has no allow rule in package cmo.context", source)
	}
	for name, src := range map[string]string{decisionFile: decisionModule, batchFile: batchModule, partialFile: partialModule} {
		modules[name] = ast.MustParseModuleWithOpts(src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	}
	compiler := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if !cfg.network {
		// refuseNetwork names the call; the capabilities make sure no other
		// way of reaching these built-ins compiles either.
		compiler = compiler.WithCapabilities(withoutNetwork())
	}
	if compiler.Compile(modules); compiler.Failed() {
		return nil, compileError(source, "compiling policy", compiler.Errors)
	}
	if data == nil {
		data = map[string]any{}
	}
	store := inmem.NewFromObject(data)
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(query),
			rego.Compiler(compiler),
			rego.Store(store),
			// A built-in that fails (to_number("x"), a bad regex) must be an
			// evaluation error, not a silently undefined rule that could
			// turn a deny into an allow.
			rego.StrictBuiltinErrors(true),
			rego.SetRegoVersion(ast.RegoV1),
		).PrepareForEval(ctx)
	}
	e := &Engine{revision: revision(files, data), source: source, files: files}
	var err error
	if e.item, err = prepare(decisionQuery); err != nil {
		return nil, compileError(source, "compiling policy", err)
	}
	if e.batch, err = prepare(batchQuery); err != nil {
		return nil, compileError(source, "compiling policy", err)
	}
	if hasPack {
		q, err := prepare(packQuery)
		if err != nil {
			return nil, compileError(source, "compiling policy", err)
		}
		e.pack = &q
	}
	user := make([]*ast.Module, 0, len(files))
	for _, f := range files {
		user = append(user, compiler.Modules[f.Name])
	}
	e.needs = analyseInput(user)
	e.memo = deterministic(user)
	if e.memo && cfg.memo > 0 {
		e.decisions, _ = lru.New[string, h4r.Decision](cfg.memo) // errors only for a size <= 0
	}
	if e.memo {
		e.compiled = newPredicates(cfg.predicates, e.revision, compiler, store, user)
	}
	return e, nil
}

// refuseNetwork returns an invalid_argument error naming the first call of
// one of NetworkBuiltins in mod and its file:line:column.
func refuseNetwork(mod *ast.Module) error {
	var found *ast.Term
	denied := NetworkBuiltins()
	check := func(op *ast.Term) {
		if found == nil && op != nil && slices.Contains(denied, op.String()) {
			found = op
		}
	}
	ast.NewGenericVisitor(func(x any) bool {
		switch v := x.(type) {
		case *ast.Expr:
			if v.IsCall() {
				check(v.OperatorTerm())
			}
		case ast.Call:
			if len(v) > 0 {
				check(v[0])
			}
		}
		return found != nil
	}).Walk(mod)
	if found == nil {
		return nil
	}
	where := mod.Package.Location
	if found.Location != nil {
		where = found.Location
	}
	at := fmt.Sprintf("%s:%d:%d", where.File, where.Row, where.Col)
	return h4r.Errorf(h4r.EINVALID, at, "%s: the policy calls %s, which reaches the network or the process environment; "+
		"embedded policies may not, unless SCS_POLICY_NETWORK=true", at, found)
}

// withoutNetwork is OPA's capabilities without NetworkBuiltins.
func withoutNetwork() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	denied := NetworkBuiltins()
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool { return slices.Contains(denied, b.Name) })
	return caps
}

// compileError turns OPA's parse or compile errors into an invalid_argument
// error whose field is the first problem's file:line:column and whose
// message lists every problem as file:line:column: code: message.
func compileError(fallbackFile, doing string, err error) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) || len(astErrs) == 0 {
		return h4r.Errorf(h4r.EINVALID, fallbackFile, "%s: %v", doing, err)
	}
	field := fallbackFile
	lines := make([]string, 0, len(astErrs))
	for i, e := range astErrs {
		where := fallbackFile
		if e.Location != nil && e.Location.File != "" {
			where = fmt.Sprintf("%s:%d:%d", e.Location.File, e.Location.Row, e.Location.Col)
		}
		if i == 0 {
			field = where
		}
		lines = append(lines, fmt.Sprintf("%s: %s: %s", where, e.Code, e.Message))
	}
	return h4r.Errorf(h4r.EINVALID, field, "%s:\n  %s", doing, strings.Join(lines, "\n  "))
}

// Revision returns a short sha256 of the loaded modules and data, so that
// packs, caches and audit logs can name the policy that decided.
func (e *Engine) Revision() string { return e.revision }

// Source returns "bundled", "modules" or the policy directory or bundle.
func (e *Engine) Source() string { return e.source }

// Files returns the policy's modules (without tests), sorted by key.
func (e *Engine) Files() []File { return slices.Clone(e.files) }

// Decide evaluates the policy for one item. An evaluation error, an
// undefined decision or a decision whose allow is missing or not a boolean
// is an error: the caller must not treat it as allowed.
func (e *Engine) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	if item == nil {
		return h4r.Decision{}, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
	}
	// OPA notices cancellation only between evaluation steps, and a short
	// policy may finish first; a cancelled request gets no decisions.
	if err := ctx.Err(); err != nil {
		return h4r.Decision{}, fmt.Errorf("evaluating policy %s for item %q: %w", e.revision, item.ID, err)
	}
	if d, ok := e.decideCompiled(ctx, spec, item); ok {
		return d, nil
	}
	itemValue, err := e.needs.itemValue(item)
	if err != nil {
		return h4r.Decision{}, err
	}
	input := ast.NewObject(
		ast.Item(ast.InternedTerm("specialist"), ast.NewTerm(specialistValue(spec))),
		ast.Item(ast.InternedTerm("item"), ast.NewTerm(itemValue)),
	)
	rs, err := e.item.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return h4r.Decision{}, fmt.Errorf("evaluating policy %s for item %q: %w", e.revision, item.ID, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return h4r.Decision{}, fmt.Errorf("evaluating policy %s for item %q: decision %s is undefined", e.revision, item.ID, PackagePath)
	}
	d, err := decodeDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return h4r.Decision{}, fmt.Errorf("reading policy %s decision for item %q: %w", e.revision, item.ID, err)
	}
	return d, nil
}

// DecideBatch decides every item, with the same decisions Decide gives one
// by one: with the specialist's compiled predicate (compiled.go), and the
// items it cannot decide in one OPA evaluation. If that evaluation fails
// (one item's rules conflict, say), every such item is decided on its own,
// so that only the items whose decision cannot be made get an error.
func (e *Engine) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	if out, ok := e.decideBatchCompiled(ctx, spec, items); ok {
		return out
	}
	return e.decideBatchOPA(ctx, spec, items)
}

// decideBatchOPA decides the items in one OPA evaluation.
func (e *Engine) decideBatchOPA(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	out := make([]h4r.DecisionResult, len(items))
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("evaluating policy %s: %w", e.revision, err)
		}
		return out
	}
	terms, keys, slot, err := e.distinctInputs(items)
	if err != nil {
		return e.decideEach(ctx, spec, items)
	}
	// Inputs decided before, for this specialist, need no evaluation.
	decided := make([]*h4r.Decision, len(terms))
	var ask []*ast.Term
	var askIdx []int
	sk := specialistKey(spec) + "\x00"
	for j, term := range terms {
		if e.decisions != nil {
			if d, ok := e.decisions.Get(sk + keys[j]); ok {
				decided[j] = &d
				continue
			}
		}
		ask, askIdx = append(ask, term), append(askIdx, j)
	}
	if len(ask) > 0 {
		input := ast.NewObject(
			ast.Item(ast.InternedTerm("specialist"), ast.NewTerm(specialistValue(spec))),
			ast.Item(ast.InternedTerm("items"), ast.ArrayTerm(ask...)),
		)
		rs, err := e.batch.Eval(ctx, rego.EvalParsedInput(input))
		if err != nil || len(rs) == 0 || len(rs[0].Expressions) == 0 {
			return e.decideEach(ctx, spec, items)
		}
		list, ok := rs[0].Expressions[0].Value.([]any)
		if !ok || len(list) != len(ask) {
			return e.decideEach(ctx, spec, items)
		}
		failed := map[int]error{}
		for k, v := range list {
			j := askIdx[k]
			d, err := decodeDecision(v)
			if err != nil {
				failed[j] = err
				continue
			}
			decided[j] = &d
			if e.decisions != nil {
				e.decisions.Add(sk+keys[j], cloneDecision(d))
			}
		}
		for i, it := range items {
			if err, bad := failed[slot[i]]; bad {
				out[i].Err = fmt.Errorf("reading policy %s decision for item %q: %w", e.revision, it.ID, err)
			}
		}
	}
	for i := range items {
		if out[i].Err == nil {
			out[i].Decision = cloneDecision(*decided[slot[i]])
		}
	}
	return out
}

// distinctInputs converts the items to the inputs the policy sees, once
// per distinct input when the policy is deterministic: items the policy
// sees alike (the same values at every key it reads) are evaluated once.
// terms are the distinct inputs; slot[i] is the index of item i's.
// keys[j] is the j-th input rendered (String is a faithful rendering:
// equal strings, equal values), when the policy is deterministic.
func (e *Engine) distinctInputs(items []*h4r.Item) (terms []*ast.Term, keys []string, slot []int, err error) {
	terms = make([]*ast.Term, 0, len(items))
	slot = make([]int, len(items))
	seen := map[string]int{}
	for i, it := range items {
		if it == nil {
			return nil, nil, nil, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
		}
		v, err := e.needs.itemValue(it)
		if err != nil {
			return nil, nil, nil, err
		}
		if e.memo {
			key := v.String()
			if j, ok := seen[key]; ok {
				slot[i] = j
				continue
			}
			seen[key] = len(terms)
			keys = append(keys, key)
		}
		slot[i] = len(terms)
		terms = append(terms, ast.NewTerm(v))
	}
	return terms, keys, slot, nil
}

func (e *Engine) decideEach(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	out := make([]h4r.DecisionResult, len(items))
	for i, it := range items {
		out[i].Decision, out[i].Err = e.Decide(ctx, spec, it)
	}
	return out
}

// decodeDecision reads the package document. allow is required; redact,
// redactedFields and reason may be absent but must have the right type.
func decodeDecision(v any) (h4r.Decision, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return h4r.Decision{}, fmt.Errorf("decision is a %T, want an object", v)
	}
	var d h4r.Decision
	allow, ok := doc["allow"].(bool)
	if !ok {
		return h4r.Decision{}, fmt.Errorf("decision.allow is %s, want a boolean", describe(doc["allow"]))
	}
	d.Allow = allow
	if raw, present := doc["redact"]; present {
		if d.Redact, ok = raw.(bool); !ok {
			return h4r.Decision{}, fmt.Errorf("decision.redact is %s, want a boolean", describe(raw))
		}
	}
	d.RedactedFields = []string{}
	if raw, present := doc["redactedFields"]; present {
		list, ok := raw.([]any)
		if !ok {
			return h4r.Decision{}, fmt.Errorf("decision.redactedFields is %s, want a list of JSONPath strings", describe(raw))
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return h4r.Decision{}, fmt.Errorf("decision.redactedFields[%d] is %s, want a JSONPath string", i, describe(e))
			}
			d.RedactedFields = append(d.RedactedFields, s)
		}
	}
	if raw, present := doc["reason"]; present {
		if d.Reason, ok = raw.(string); !ok {
			return h4r.Decision{}, fmt.Errorf("decision.reason is %s, want a string", describe(raw))
		}
	}
	return d, nil
}

func describe(v any) string {
	if v == nil {
		return "missing or null"
	}
	return fmt.Sprintf("a %T (%v)", v, v)
}

// deterministic reports whether no module calls a non-deterministic
// built-in (time.now_ns, rand.intn, http.send, ...): only then do two
// evaluations with the same input always decide alike.
func deterministic(modules []*ast.Module) bool {
	det := true
	for _, m := range modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if !x.IsCall() {
				return false
			}
			name := x.Operator().String()
			if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
				det = false
			}
			return !det
		})
	}
	return det
}
