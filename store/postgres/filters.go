package postgres

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// params collects the arguments of one statement and names them $1, $2, …
type params struct{ args []any }

func (p *params) add(v any) string {
	p.args = append(p.args, v)
	return "$" + strconv.Itoa(len(p.args))
}

// whereFilters turns f into SQL conditions on the items table aliased as
// i, each starting with " AND ", adding their arguments to p. Only fixed
// SQL text is produced: every value is a bound argument.
func whereFilters(f h4r.Filters, p *params) (string, error) {
	var sb strings.Builder
	if len(f.Kinds) > 0 {
		sb.WriteString(" AND i.kind = ANY(" + p.add(f.Kinds) + "::text[])")
	}
	if len(f.Tags) > 0 {
		// Every tag is required: containment, served by the GIN index.
		sb.WriteString(" AND i.tags @> " + p.add(f.Tags) + "::text[]")
	}
	if len(f.AnyTags) > 0 {
		// At least one of them: overlap, served by the same GIN index.
		sb.WriteString(" AND i.tags && " + p.add(f.AnyTags) + "::text[]")
	}
	// The range is half-open, [CreatedAfter, CreatedBefore), so that
	// consecutive ranges neither overlap nor leave gaps.
	if !f.CreatedAfter.IsZero() {
		sb.WriteString(" AND i.created_at >= " + p.add(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		sb.WriteString(" AND i.created_at < " + p.add(f.CreatedBefore))
	}
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	// Sorted, so that the same filters give the same SQL text; checked
	// before any SQL is built, so that a bad key is an error even when
	// the query would find nothing anyway.
	slices.Sort(keys)
	contained := map[string]any{}
	for _, key := range keys {
		cond, value, err := metadataCondition(key, f.Metadata[key])
		if err != nil {
			return "", err
		}
		if cond != "" {
			if strings.Contains(cond, "?") {
				cond = strings.ReplaceAll(cond, "?", p.add(value))
			}
			sb.WriteString(" AND " + cond)
			continue
		}
		contained[key] = value
	}
	if len(contained) > 0 {
		// One containment test for all the keys: @> compares JSON types
		// strictly (the string "1", the number 1 and true all differ),
		// and the jsonb_path_ops index answers it.
		b, err := json.Marshal(contained)
		if err != nil {
			return "", h4r.Errorf(h4r.EINVALID, "filters", "metadata filters cannot be encoded as JSON: %v", err)
		}
		sb.WriteString(" AND i.metadata @> " + p.add(string(b)) + "::jsonb")
	}
	return sb.String(), nil
}

// metadataCondition checks one metadata filter. Store-maintained keys are
// read from their columns, which hold the live values: it returns that
// condition, with ? for the argument. Every other key returns "" and the
// value to test by containment.
func metadataCondition(key string, value any) (string, any, error) {
	field := "filters." + key
	if !h4r.ValidMetadataKey(key) {
		return "", nil, h4r.Errorf(h4r.EINVALID, field, "filter key must be a letter or _ followed by up to 63 letters, digits, _ or -")
	}
	switch x := value.(type) {
	case int:
		value = float64(x)
	case int64:
		value = float64(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", nil, h4r.Errorf(h4r.EINVALID, field, "metadata filter value must be a finite number")
		}
	case string, bool:
	default:
		return "", nil, h4r.Errorf(h4r.EINVALID, field, "metadata filter value must be a string, number or boolean, got %T", value)
	}
	if column := sqlkit.MaintainedColumn(key); column != "" {
		if n, ok := value.(float64); ok {
			return "i." + column + " = ?::float8", n, nil
		}
		return "false", nil, nil // these keys hold numbers: nothing else equals them
	}
	return "", value, nil
}
