package policy

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
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

const (
	decisionFile  = "h4r/internal/decision.rego"
	decisionQuery = "data.h4r.internal.decision"
)

// BundledFile is the name the default policy is compiled under; compile and
// evaluation errors point into it.
const BundledFile = "rego/context.rego"

// Decision is what the policy says about one item for one specialist.
// RedactedFields are JSONPaths ($.text, $.content.…) to replace with a
// redaction marker; Reason names the rules that decided.
type Decision struct {
	Allow          bool     `json:"allow"`
	Redact         bool     `json:"redact"`
	RedactedFields []string `json:"redactedFields"`
	Reason         string   `json:"reason"`
}

// Engine is a prepared query for data.cmo.context. It is safe for
// concurrent use.
type Engine struct {
	query    rego.PreparedEvalQuery
	revision string
	source   string
}

// Option configures New.
type Option func(*config)

type config struct {
	dir     string
	modules map[string]string
}

// WithPolicyDir loads every *.rego file under dir (recursively, skipping
// *_test.rego) instead of the bundled policy. The files must be Rego v1 and
// one of them must declare package cmo.context with an allow rule.
func WithPolicyDir(dir string) Option {
	return func(c *config) { c.dir = dir }
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

// regoFile is one module to compile. Name identifies it in errors; Key (the
// path relative to the policy directory) in the revision, so that the same
// policy has the same revision wherever its directory lives.
type regoFile struct {
	Name   string
	Key    string
	Source string
}

// New compiles the policy and prepares the decision query. A file that does
// not parse or compile is an invalid_argument error naming the file and
// line; so is a policy that declares no package cmo.context or no allow rule.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	files, source, err := cfg.files()
	if err != nil {
		return nil, err
	}
	regoOpts := []func(*rego.Rego){
		rego.Query(decisionQuery),
		rego.Module(decisionFile, decisionModule),
		// A built-in that fails (to_number("x"), a bad regex) must be an
		// evaluation error, not a silently undefined rule that could turn a
		// deny into an allow.
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(ast.RegoV1),
	}
	var hasPackage, hasAllow bool
	for _, f := range files {
		mod, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, compileError(f.Name, "parsing policy", err)
		}
		if mod.Package.Path.String() == PackagePath {
			hasPackage = true
			hasAllow = hasAllow || slices.ContainsFunc(mod.Rules, func(r *ast.Rule) bool { return r.Head.Ref().String() == "allow" })
		}
		regoOpts = append(regoOpts, rego.ParsedModule(mod))
	}
	switch {
	case !hasPackage:
		return nil, h4r.Errorf(h4r.EINVALID, "policy", "policy from %s declares no package cmo.context", source)
	case !hasAllow:
		return nil, h4r.Errorf(h4r.EINVALID, "policy", "policy from %s has no allow rule in package cmo.context", source)
	}
	query, err := rego.New(regoOpts...).PrepareForEval(ctx)
	if err != nil {
		return nil, compileError(source, "compiling policy", err)
	}
	return &Engine{query: query, revision: revision(files), source: source}, nil
}

// files returns the modules to compile, sorted by name, and the policy's
// source for Engine.Source.
func (c config) files() ([]regoFile, string, error) {
	var files []regoFile
	source := SourceBundled
	if c.dir != "" {
		source = c.dir
		found, err := readPolicyDir(c.dir)
		if err != nil {
			return nil, "", err
		}
		files = found
	} else if len(c.modules) > 0 {
		source = SourceModules
	} else {
		files = []regoFile{{Name: BundledFile, Key: BundledFile, Source: bundledPolicy}}
	}
	for name, src := range c.modules {
		files = append(files, regoFile{Name: name, Key: name, Source: src})
	}
	slices.SortFunc(files, func(a, b regoFile) int { return strings.Compare(a.Key, b.Key) })
	return files, source, nil
}

func readPolicyDir(dir string) ([]regoFile, error) {
	var files []regoFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") || strings.HasSuffix(path, "_test.rego") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, regoFile{Name: path, Key: filepath.ToSlash(rel), Source: string(src)})
		return nil
	})
	if err != nil {
		return nil, h4r.Errorf(h4r.EINVALID, "policyDir", "reading policy directory %s: %v", dir, err)
	}
	if len(files) == 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "policyDir", "policy directory %s holds no .rego files (besides tests)", dir)
	}
	return files, nil
}

// compileError turns OPA's parse or compile errors into an invalid_argument
// error whose field is the first offending file; the message keeps OPA's
// "file:line: code: message" lines.
func compileError(fallbackFile, doing string, err error) error {
	field := fallbackFile
	var astErrs ast.Errors
	if errors.As(err, &astErrs) && len(astErrs) > 0 && astErrs[0].Location != nil && astErrs[0].Location.File != "" {
		field = astErrs[0].Location.File
	}
	return h4r.Errorf(h4r.EINVALID, field, "%s: %v", doing, err)
}

// revision is a short sha256 over the modules' names and sources: two
// engines with the same revision decide alike.
func revision(files []regoFile) string {
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.Key))
		h.Write([]byte{0})
		h.Write([]byte(f.Source))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Revision returns a short sha256 of the loaded modules, so that packs and
// audit logs can name the policy that decided.
func (e *Engine) Revision() string { return e.revision }

// Source returns "bundled", "modules" or the policy directory.
func (e *Engine) Source() string { return e.source }

// Decide evaluates the policy for one item. An evaluation error, an
// undefined decision or a decision whose allow is missing or not a boolean
// is an error: the caller must not treat it as allowed.
func (e *Engine) Decide(ctx context.Context, spec h4r.Specialist, item *sources.Item) (Decision, error) {
	if item == nil {
		return Decision{}, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
	}
	// OPA notices cancellation only between evaluation steps, and a short
	// policy may finish first; a cancelled request gets no decisions.
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("evaluating policy %s for item %q: %w", e.revision, item.ID, err)
	}
	// Converting the input straight to an AST value skips the defensive
	// deep copy EvalInput makes first, about a third of a decision's cost.
	input, err := ast.InterfaceToValue(Input(spec, item))
	if err != nil {
		return Decision{}, fmt.Errorf("building policy input for item %q: %w", item.ID, err)
	}
	rs, err := e.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return Decision{}, fmt.Errorf("evaluating policy %s for item %q: %w", e.revision, item.ID, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return Decision{}, fmt.Errorf("evaluating policy %s for item %q: decision %s is undefined", e.revision, item.ID, PackagePath)
	}
	d, err := decodeDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return Decision{}, fmt.Errorf("reading policy %s decision for item %q: %w", e.revision, item.ID, err)
	}
	return d, nil
}

// decodeDecision reads the package document. allow is required; redact,
// redactedFields and reason may be absent but must have the right type.
func decodeDecision(v any) (Decision, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return Decision{}, fmt.Errorf("decision is a %T, want an object", v)
	}
	var d Decision
	allow, ok := doc["allow"].(bool)
	if !ok {
		return Decision{}, fmt.Errorf("decision.allow is %s, want a boolean", describe(doc["allow"]))
	}
	d.Allow = allow
	if raw, present := doc["redact"]; present {
		if d.Redact, ok = raw.(bool); !ok {
			return Decision{}, fmt.Errorf("decision.redact is %s, want a boolean", describe(raw))
		}
	}
	d.RedactedFields = []string{}
	if raw, present := doc["redactedFields"]; present {
		list, ok := raw.([]any)
		if !ok {
			return Decision{}, fmt.Errorf("decision.redactedFields is %s, want a list of JSONPath strings", describe(raw))
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return Decision{}, fmt.Errorf("decision.redactedFields[%d] is %s, want a JSONPath string", i, describe(e))
			}
			d.RedactedFields = append(d.RedactedFields, s)
		}
	}
	if raw, present := doc["reason"]; present {
		if d.Reason, ok = raw.(string); !ok {
			return Decision{}, fmt.Errorf("decision.reason is %s, want a string", describe(raw))
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
