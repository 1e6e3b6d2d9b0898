package neo4j

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/h4r/h4r"
)

// filter is h4r.Filters checked in Go against items read from the store,
// with the semantics of the stores' SQL (store/storetest's filter cases):
// kinds are alternatives, tags are all required, anyTags need one present,
// the creation range is
// half-open, and a metadata value matches only a value of the same JSON
// type. The graph holds ids and kinds only, so filters apply here, after
// the walk, as the store's query applies them to what the walk reached.
type filter struct {
	f        h4r.Filters
	tags     []string
	metadata map[string]any // values as encoding/json decodes them
}

// compileFilter checks f as the stores do: errors name the field
// ("filters.<key>") with code invalid_argument.
func compileFilter(f h4r.Filters) (*filter, error) {
	c := &filter{f: f, metadata: map[string]any{}}
	c.tags = slices.Clone(f.Tags)
	slices.Sort(c.tags)
	c.tags = slices.Compact(c.tags)
	for key, v := range f.Metadata {
		field := "filters." + key
		if !h4r.ValidMetadataKey(key) {
			return nil, h4r.Errorf(h4r.EINVALID, field, "filter key must be a letter or _ followed by up to 63 letters, digits, _ or -")
		}
		switch x := v.(type) {
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		case float64, string, bool:
		default:
			return nil, h4r.Errorf(h4r.EINVALID, field, "metadata filter value must be a string, number or boolean, got %T", v)
		}
		c.metadata[key] = v
	}
	return c, nil
}

// match reports whether it passes the filter.
func (c *filter) match(it *h4r.Item) (bool, error) {
	f := c.f
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, it.Kind) {
		return false, nil
	}
	for _, t := range c.tags {
		if !slices.Contains(it.Metadata.Tags, t) {
			return false, nil
		}
	}
	if len(f.AnyTags) > 0 && !slices.ContainsFunc(f.AnyTags, func(t string) bool { return slices.Contains(it.Metadata.Tags, t) }) {
		return false, nil
	}
	created := it.Metadata.CreatedAt
	if !f.CreatedAfter.IsZero() && created.Before(f.CreatedAfter) {
		return false, nil
	}
	if !f.CreatedBefore.IsZero() && !created.Before(f.CreatedBefore) {
		return false, nil
	}
	if len(c.metadata) == 0 {
		return true, nil
	}
	// The metadata as one flat JSON object, as the store keeps it and as
	// policies see it.
	raw, err := json.Marshal(it.Metadata)
	if err != nil {
		return false, fmt.Errorf("encoding the metadata of item %q: %w", it.ID, err)
	}
	var flat map[string]any
	if err := json.Unmarshal(raw, &flat); err != nil {
		return false, fmt.Errorf("decoding the metadata of item %q: %w", it.ID, err)
	}
	for key, want := range c.metadata {
		if live, ok := maintained(it, key); ok {
			// Store-maintained keys hold numbers: nothing else equals them.
			if n, isNum := want.(float64); !isNum || n != live {
				return false, nil
			}
			continue
		}
		got, ok := flat[key]
		if !ok || got != want { // same dynamic type and value: string, float64 or bool
			return false, nil
		}
	}
	return true, nil
}

// maintained returns the live value of a store-maintained numeric key.
func maintained(it *h4r.Item, key string) (float64, bool) {
	switch key {
	case "version":
		return float64(it.Metadata.Version), true
	case "accessCount":
		return float64(it.Metadata.AccessCount), true
	case "byteSize":
		return float64(it.Metadata.ByteSize), true
	case "tokens":
		return float64(it.Metadata.Tokens), true
	}
	return 0, false
}
