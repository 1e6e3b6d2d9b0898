package server

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/labstack/echo/v5"
)

// openAPIFiles describe every route this server serves: core.json holds
// the document's frame and the core routes; each feature adds a file with
// its own "paths" and "components" (one file per feature keeps parallel
// work from editing one long document). A test compares the merged paths
// with the router's, so the two cannot drift apart.
//
//go:embed openapi/*.json
var openAPIFiles embed.FS

// openAPIDocument merges openapi/*.json into one OpenAPI document: core.json
// is the base; every other file contributes paths and components, and may
// not redefine one.
func openAPIDocument() ([]byte, error) {
	read := func(name string) (map[string]any, error) {
		b, err := openAPIFiles.ReadFile("openapi/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading openapi/%s: %w", name, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("parsing openapi/%s: %w", name, err)
		}
		return doc, nil
	}
	base, err := read("core.json")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(openAPIFiles, "openapi/*.json")
	if err != nil {
		return nil, fmt.Errorf("listing openapi/: %w", err)
	}
	slices.Sort(names)
	for _, path := range names {
		name := path[len("openapi/"):]
		if name == "core.json" {
			continue
		}
		part, err := read(name)
		if err != nil {
			return nil, err
		}
		if err := mergeSection(base, part, name, "paths"); err != nil {
			return nil, err
		}
		comps, _ := part["components"].(map[string]any)
		for section := range comps {
			baseComps, _ := base["components"].(map[string]any)
			if baseComps == nil {
				baseComps = map[string]any{}
				base["components"] = baseComps
			}
			if err := mergeSection(baseComps, comps, name, section); err != nil {
				return nil, err
			}
		}
	}
	return json.MarshalIndent(base, "", "  ")
}

// mergeSection adds part[section]'s entries to base[section], refusing an
// entry base already has.
func mergeSection(base, part map[string]any, file, section string) error {
	add, _ := part[section].(map[string]any)
	if len(add) == 0 {
		return nil
	}
	into, _ := base[section].(map[string]any)
	if into == nil {
		into = map[string]any{}
		base[section] = into
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		if _, dup := into[k]; dup {
			return fmt.Errorf("openapi/%s redefines %s %q", file, section, k)
		}
		into[k] = add[k]
	}
	return nil
}

func (s *Server) openAPI(c *echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/json")
	return writeWhole(c.Response(), s.openAPIDoc)
}
