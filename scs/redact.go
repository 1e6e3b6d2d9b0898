package scs

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/h4r/h4r"
)

// Redact replaces every value each path names with marker and returns the
// paths that named at least one value, in order, without repeats. Paths
// that name nothing are ignored. $.content as a whole is removed (content is
// an object and cannot become a string).
//
// Redact never modifies what d.Content points to, which is usually shared
// with a stored item: when a content path applies, d.Content is replaced by
// a redacted deep copy. If any path is invalid, Redact returns an
// invalid_argument error naming it (field "redactedFields[i]") and leaves d
// unchanged.
func Redact(d *h4r.Delivered, paths []string, marker string) (applied []string, err error) {
	parsed := make([]Path, len(paths))
	copyContent := false
	for i, raw := range paths {
		p, err := ParsePath(raw)
		if err != nil {
			return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("redactedFields[%d]", i), "%s", h4r.ErrorMessage(err))
		}
		parsed[i] = p
		copyContent = copyContent || (p.Root() == RootContent && len(p.Steps()) > 0)
	}
	content := d.Content
	if copyContent && content != nil {
		if content, err = cloneContent(content); err != nil {
			return nil, fmt.Errorf("copying content of item %q for redaction: %w", d.ID, err)
		}
	}
	text := d.Text
	seen := make(map[string]bool, len(parsed))
	for _, p := range parsed {
		var hit bool
		switch {
		case p.Root() == RootText:
			text, hit = marker, true
		case len(p.Steps()) == 0:
			hit = content != nil
			content = nil
		case content != nil:
			hit = replace(content, p.Steps(), marker)
		}
		if hit && !seen[p.String()] {
			seen[p.String()] = true
			applied = append(applied, p.String())
		}
	}
	d.Text, d.Content = text, content
	return applied, nil
}

// replace sets every value that steps name under node to marker and
// reports whether there was one. node is already a private copy.
func replace(node any, steps []h4r.PathStep, marker string) bool {
	s, last := steps[0], len(steps) == 1
	set := func(get func() any, put func(any)) bool {
		if last {
			put(marker)
			return true
		}
		return replace(get(), steps[1:], marker)
	}
	hit := false
	switch c := node.(type) {
	case map[string]any:
		switch s.Kind {
		case h4r.StepName:
			if v, ok := c[s.Name]; ok {
				hit = set(func() any { return v }, func(m any) { c[s.Name] = m })
			}
		case h4r.StepWildcard:
			for k, v := range c {
				hit = set(func() any { return v }, func(m any) { c[k] = m }) || hit
			}
		}
	case []any:
		switch s.Kind {
		case h4r.StepIndex:
			i := s.Index
			if i < 0 {
				i += len(c)
			}
			if i >= 0 && i < len(c) {
				hit = set(func() any { return c[i] }, func(m any) { c[i] = m })
			}
		case h4r.StepWildcard:
			for i := range c {
				hit = set(func() any { return c[i] }, func(m any) { c[i] = m }) || hit
			}
		}
	}
	return hit
}

// cloneContent deep-copies content. Maps and lists decoded from JSON are
// copied directly; any other composite (a []string or struct built in Go)
// goes through JSON, so that the copy holds only map[string]any and []any
// containers that redaction can walk.
func cloneContent(content map[string]any) (map[string]any, error) {
	c, err := cloneValue(content)
	if err != nil {
		return nil, err
	}
	m, _ := c.(map[string]any)
	return m, nil
}

func cloneValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := cloneValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := cloneValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep large integers exact
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
