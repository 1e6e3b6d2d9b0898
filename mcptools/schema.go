package mcptools

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// anyValue describes a value of any JSON type (a Go any field).
const anyValue = "any JSON value"

// schemaFor infers the JSON Schema of T (a pointer is its element) and
// makes it one every MCP client accepts. jsonschema-go writes the schema
// of a Go any as the boolean schema true, which is valid JSON Schema, but
// the TypeScript SDK's client (and so Claude Code, the Inspector, and
// most hosts) requires every property to be an object schema, and
// refuses the whole tools/list when one is not: where a schema may be
// left out (items, additionalProperties, ...) true is left out, which
// means the same; where it may not (a property, a member of allOf, ...),
// it becomes {"description": "any JSON value"}. false is kept only as
// additionalProperties, the common "no other members" idiom.
func schemaFor[T any]() (*jsonschema.Schema, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		return nil, fmt.Errorf("inferring the JSON schema of %s: %w", t, err)
	}
	noBooleans(s)
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, fmt.Errorf("checking the JSON schema of %s: %w", t, err)
	}
	return s, nil
}

var schemaType = reflect.TypeFor[*jsonschema.Schema]()

// noBooleans rewrites the schemas under s that would marshal as true, as
// schemaFor says.
func noBooleans(s *jsonschema.Schema) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() {
			continue // the package's own bookkeeping
		}
		f := v.Field(i)
		switch {
		case f.Type() == schemaType:
			c := f.Interface().(*jsonschema.Schema)
			switch {
			case c == nil:
			case isTrue(c) && sf.Name == "Not":
				// {"not": true} is the false schema: kept.
			case isTrue(c):
				f.SetZero() // absent: any value
			default:
				noBooleans(c)
			}
		case f.Type() == reflect.SliceOf(schemaType):
			for j := range f.Len() {
				f.Index(j).Set(reflect.ValueOf(member(f.Index(j).Interface().(*jsonschema.Schema))))
			}
		case f.Type() == reflect.MapOf(reflect.TypeFor[string](), schemaType):
			for _, k := range f.MapKeys() {
				f.SetMapIndex(k, reflect.ValueOf(member(f.MapIndex(k).Interface().(*jsonschema.Schema))))
			}
		}
	}
}

// member is a schema that must be present (a property, an element of
// allOf) with true made an object.
func member(c *jsonschema.Schema) *jsonschema.Schema {
	if c == nil {
		return c
	}
	if isTrue(c) {
		return &jsonschema.Schema{Description: anyValue}
	}
	noBooleans(c)
	return c
}

// isTrue reports whether s is the empty schema, which marshals as true.
func isTrue(s *jsonschema.Schema) bool { return reflect.ValueOf(s).Elem().IsZero() }
