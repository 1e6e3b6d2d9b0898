package h4r

import (
	"fmt"
	"strings"
)

// CheckNUL refuses an item holding a NUL character (U+0000) anywhere it
// would be stored: its id, kind, text, links, metadata, and the strings
// and keys of its content and metadata extras. Postgres text and jsonb
// cannot hold one, so both stores refuse it, naming the field (field is
// the item's path, as "items[3]"), rather than one store taking what the
// other refuses.
func (it *Item) CheckNUL(field string) error {
	strs := []struct{ name, v string }{
		{"id", it.ID}, {"kind", it.Kind}, {"text", it.Text}, {"metadata.source", it.Metadata.Source},
	}
	for _, list := range []struct {
		name string
		vs   []string
	}{{"metadata.tags", it.Metadata.Tags}, {"metadata.restrictedToGroups", it.Metadata.RestrictedToGroups}, {"metadata.piiFields", it.Metadata.PIIFields}} {
		for i, v := range list.vs {
			strs = append(strs, struct{ name, v string }{fmt.Sprintf("%s[%d]", list.name, i), v})
		}
	}
	for i, l := range it.Links {
		p := fmt.Sprintf("links[%d].", i)
		strs = append(strs, struct{ name, v string }{p + "type", l.Type}, struct{ name, v string }{p + "target", l.Target},
			struct{ name, v string }{p + "targetType", l.TargetType}, struct{ name, v string }{p + "context", l.Context})
	}
	for _, s := range strs {
		if strings.IndexByte(s.v, 0) >= 0 {
			return nulError(field + "." + s.name)
		}
	}
	if err := checkNULValue(field+".content", it.Content); err != nil {
		return err
	}
	return checkNULValue(field+".metadata", it.Metadata.Extra)
}

func nulError(field string) error {
	return Errorf(EINVALID, field, "contains a NUL character (U+0000), which the stores cannot hold")
}

// checkNULValue walks a decoded JSON value (maps, slices, strings).
func checkNULValue(path string, v any) error {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return nulError(path)
		}
	case map[string]any:
		for k, x := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return Errorf(EINVALID, path, "holds a key with a NUL character (U+0000), which the stores cannot hold")
			}
			if err := checkNULValue(path+"."+k, x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := checkNULValue(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
				return err
			}
		}
	case []string:
		for i, x := range v {
			if err := checkNULValue(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
				return err
			}
		}
	}
	return nil
}
