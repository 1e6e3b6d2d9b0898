package policy

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/h4r/h4r"
)

//go:embed rego/context_test.rego
var bundledTests string

// BundledTestFile is the name the bundled policy's Rego tests go by.
const BundledTestFile = "rego/context_test.rego"

// Bundled returns the bundled policy's module, and its Rego unit tests when
// withTests is set: the worked example of policy authoring.
func Bundled(withTests bool) []File {
	files := []File{{Name: BundledFile, Key: BundledFile, Source: bundledPolicy}}
	if withTests {
		files = append(files, File{Name: BundledTestFile, Key: BundledTestFile, Source: bundledTests})
	}
	return files
}

// Fired is a rule of the policy whose body held during a decision.
type Fired struct {
	File string `json:"file"`
	Row  int    `json:"row"`
	Col  int    `json:"col"`
	Rule string `json:"rule"` // the rule's head, e.g. deny contains "credentials"
}

func (f Fired) String() string { return fmt.Sprintf("%s:%d:%d: %s", f.File, f.Row, f.Col, f.Rule) }

// Explanation is how a decision came about: the policy's rules that fired,
// in the order they fired, and OPA's trace of the evaluation trimmed to the
// policy's own files (H4R's internal decision module left out).
type Explanation struct {
	Fired []Fired
	Trace []*topdown.Event
}

// PrettyTrace writes the trimmed trace as `opa eval --explain full` does,
// with locations.
func (x Explanation) PrettyTrace(w io.Writer) { topdown.PrettyTraceWithLocation(w, x.Trace) }

// Explain decides one item, as Decide does, and says which rules fired.
func (e *Engine) Explain(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, Explanation, error) {
	if item == nil {
		return h4r.Decision{}, Explanation{}, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
	}
	itemValue, err := e.needs.itemValue(item)
	if err != nil {
		return h4r.Decision{}, Explanation{}, err
	}
	input := ast.NewObject(
		ast.Item(ast.InternedTerm("specialist"), ast.NewTerm(specialistValue(spec))),
		ast.Item(ast.InternedTerm("item"), ast.NewTerm(itemValue)),
	)
	buf := topdown.NewBufferTracer()
	rs, err := e.item.Eval(ctx, rego.EvalParsedInput(input), rego.EvalQueryTracer(buf))
	x := e.explanation(*buf)
	if err != nil {
		return h4r.Decision{}, x, fmt.Errorf("evaluating policy %s for item %q: %w", e.revision, item.ID, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return h4r.Decision{}, x, fmt.Errorf("evaluating policy %s for item %q: decision %s is undefined", e.revision, item.ID, PackagePath)
	}
	d, err := decodeDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return h4r.Decision{}, x, fmt.Errorf("reading policy %s decision for item %q: %w", e.revision, item.ID, err)
	}
	return d, x, nil
}

func (e *Engine) explanation(events []*topdown.Event) Explanation {
	own := map[string]bool{}
	for _, f := range e.files {
		own[f.Name] = true
	}
	var x Explanation
	seen := map[Fired]bool{}
	for _, ev := range events {
		if ev.Location == nil || !own[ev.Location.File] {
			continue
		}
		x.Trace = append(x.Trace, ev)
		rule, ok := ev.Node.(*ast.Rule)
		if !ok || ev.Op != topdown.ExitOp {
			continue
		}
		head := ruleHead(rule)
		f := Fired{File: ev.Location.File, Row: ev.Location.Row, Col: ev.Location.Col, Rule: head}
		if !seen[f] {
			seen[f] = true
			x.Fired = append(x.Fired, f)
		}
	}
	x.Fired = slices.Clip(x.Fired)
	return x
}

// ruleHead is the first line of the rule as written (the compiled head
// names generated variables), without an opening brace.
func ruleHead(rule *ast.Rule) string {
	if rule.Default {
		return "default " + rule.Head.String()
	}
	if rule.Location == nil || len(rule.Location.Text) == 0 {
		return rule.Head.String()
	}
	line, _, _ := strings.Cut(string(rule.Location.Text), "\n")
	line = strings.TrimSpace(line)
	line = strings.TrimSpace(strings.TrimSuffix(line, "{"))
	return line
}
