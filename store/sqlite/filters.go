package sqlite

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// whereFilters turns f into SQL conditions on the items table aliased as i,
// each starting with " AND ", and their arguments. Only fixed SQL text is
// produced: every value, JSON path and list is a bound argument.
func whereFilters(f h4r.Filters) (string, []any, error) {
	var sb strings.Builder
	var args []any
	if len(f.Kinds) > 0 {
		list, err := jsonList(f.Kinds)
		if err != nil {
			return "", nil, err
		}
		sb.WriteString(` AND i.kind IN (SELECT value FROM json_each(?))`)
		args = append(args, list)
	}
	if len(f.Tags) > 0 {
		tags := slices.Clone(f.Tags)
		slices.Sort(tags)
		tags = slices.Compact(tags)
		list, err := jsonList(tags)
		if err != nil {
			return "", nil, err
		}
		// Every tag is required: count the item's tags among them.
		sb.WriteString(` AND (SELECT count(*) FROM item_tags t WHERE t.item_id = i.id AND t.tag IN (SELECT value FROM json_each(?))) = ?`)
		args = append(args, list, len(tags))
	}
	if len(f.AnyTags) > 0 {
		list, err := jsonList(f.AnyTags)
		if err != nil {
			return "", nil, err
		}
		// At least one of them: the (tag, item_id) index answers it.
		sb.WriteString(` AND EXISTS (SELECT 1 FROM item_tags t WHERE t.item_id = i.id AND t.tag IN (SELECT value FROM json_each(?)))`)
		args = append(args, list)
	}
	// The range is half-open, [CreatedAfter, CreatedBefore), so that
	// consecutive ranges neither overlap nor leave gaps.
	if !f.CreatedAfter.IsZero() {
		sb.WriteString(` AND i.created_at >= ?`)
		args = append(args, formatTime(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		sb.WriteString(` AND i.created_at < ?`)
		args = append(args, formatTime(f.CreatedBefore))
	}
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same filters give the same SQL text
	for _, key := range keys {
		cond, condArgs, err := metadataCondition(key, f.Metadata[key])
		if err != nil {
			return "", nil, err
		}
		sb.WriteString(" AND ")
		sb.WriteString(cond)
		args = append(args, condArgs...)
	}
	return sb.String(), args, nil
}

// metadataCondition is the equality test of one metadata filter. The value's
// JSON type must match too: the string "1", the number 1 and true are
// different values. Store-maintained keys are read from their columns,
// which hold the live values.
func metadataCondition(key string, value any) (string, []any, error) {
	field := "filters." + key
	if !h4r.ValidMetadataKey(key) {
		return "", nil, h4r.Errorf(h4r.EINVALID, field, "filter key must be a letter or _ followed by up to 63 letters, digits, _ or -")
	}
	switch x := value.(type) {
	case int:
		value = float64(x)
	case int64:
		value = float64(x)
	case float64, string, bool:
	default:
		return "", nil, h4r.Errorf(h4r.EINVALID, field, "metadata filter value must be a string, number or boolean, got %T", value)
	}
	if column := sqlkit.MaintainedColumn(key); column != "" {
		if n, ok := value.(float64); ok {
			return "i." + column + " = ?", []any{n}, nil
		}
		return "0", nil, nil // these keys hold numbers: nothing else equals them
	}
	path := `$."` + key + `"` // the key holds no quote: h4r.ValidMetadataKey
	switch x := value.(type) {
	case bool:
		jsonType := "false"
		if x {
			jsonType = "true"
		}
		return "json_type(i.metadata, ?) = ?", []any{path, jsonType}, nil
	case string:
		return "(json_type(i.metadata, ?) = 'text' AND json_extract(i.metadata, ?) = ?)", []any{path, path, x}, nil
	default:
		return "(json_type(i.metadata, ?) IN ('integer', 'real') AND json_extract(i.metadata, ?) = ?)", []any{path, path, x}, nil
	}
}

func jsonList(values []string) (string, error) {
	b, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding a filter list: %w", err)
	}
	return string(b), nil
}
