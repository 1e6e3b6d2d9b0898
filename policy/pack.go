package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/h4r/h4r"
)

// PackSettings evaluates the policy's pack rule for a specialist. A policy
// without one, or whose rule is undefined for this specialist, sets
// nothing. Keys other than the documented ones are ignored (a policy may
// carry its own, or answer every path alike). A rule that errors, returns
// anything but an object, or sets a documented limit to anything but a
// positive integer is an error: the caller fails closed.
func (e *Engine) PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error) {
	if e.pack == nil {
		return h4r.PackSettings{}, nil
	}
	if err := ctx.Err(); err != nil {
		return h4r.PackSettings{}, fmt.Errorf("evaluating pack settings of policy %s: %w", e.revision, err)
	}
	input := ast.NewObject(ast.Item(ast.InternedTerm("specialist"), ast.NewTerm(specialistValue(spec))))
	rs, err := e.pack.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return h4r.PackSettings{}, fmt.Errorf("evaluating pack settings of policy %s: %w", e.revision, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return h4r.PackSettings{}, nil
	}
	ps, _, err := decodePackSettings(rs[0].Expressions[0].Value)
	if err != nil {
		return h4r.PackSettings{}, fmt.Errorf("reading pack settings of policy %s: %w", e.revision, err)
	}
	return ps, nil
}

var packKeys = []string{"maxBytes", "maxItems", "maxTokens", "reason"}

// decodePackSettings reads the value of the pack rule (decoded JSON: Go
// numbers are json.Number or float64), and returns the keys it ignored,
// sorted.
func decodePackSettings(v any) (h4r.PackSettings, []string, error) {
	doc, ok := v.(map[string]any)
	if !ok {
		return h4r.PackSettings{}, nil, fmt.Errorf("pack is %s, want an object", describe(v))
	}
	var ps h4r.PackSettings
	var ignored []string
	for key, raw := range doc {
		var dst *int
		switch key {
		case "maxBytes":
			dst = &ps.MaxBytes
		case "maxTokens":
			dst = &ps.MaxTokens
		case "maxItems":
			dst = &ps.MaxItems
		case "reason":
			s, ok := raw.(string)
			if !ok {
				return h4r.PackSettings{}, nil, fmt.Errorf("pack.reason is %s, want a string", describe(raw))
			}
			ps.Reason = s
			continue
		default:
			ignored = append(ignored, key)
			continue
		}
		n, ok := positiveInt(raw)
		if !ok {
			return h4r.PackSettings{}, nil, fmt.Errorf("pack.%s is %s, want a positive integer", key, describe(raw))
		}
		*dst = n
	}
	slices.Sort(ignored)
	return ps, ignored, nil
}

func positiveInt(v any) (int, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		x, err := n.Float64()
		if err != nil {
			return 0, false
		}
		f = x
	case float64:
		f = n
	case int:
		f = float64(n)
	default:
		return 0, false
	}
	if f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}
