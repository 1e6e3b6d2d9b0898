package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/h4r/h4r"
)

// Source says where a setting's value came from, lowest precedence first:
// the default, the configuration file, the environment, a flag.
type Source string

// The sources of a setting.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "environment"
	SourceFlag    Source = "flag"
)

// Loaded is a configuration and where each of its values came from.
type Loaded struct {
	Config Config
	// Sources maps every variable's name to the source of its value.
	Sources map[string]Source
}

// Load reads the configuration: the defaults, then the YAML file that
// H4R_CONFIG names (if any), then the environment, through lookup. Every
// invalid value, and every unknown key of the file, is reported, joined;
// each part is an *h4r.Error whose Field names the variable (or the file's
// key).
func Load(lookup func(string) (string, bool)) (Loaded, error) {
	out := Loaded{Config: Default(), Sources: map[string]Source{}}
	for _, v := range table() {
		out.Sources[v.Name] = SourceDefault
	}
	var errs []error
	if path, ok := lookup("H4R_CONFIG"); ok && strings.TrimSpace(path) != "" {
		path = strings.TrimSpace(path)
		data, err := os.ReadFile(path)
		if err != nil {
			return Loaded{}, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "reading the configuration file: %v", err)
		}
		values, err := ParseFile(data)
		if err != nil {
			return Loaded{}, fmt.Errorf("reading the configuration file %s: %w", path, err)
		}
		for _, v := range table() {
			if err := apply(&out, v, SourceFile, func(name string) (string, bool) {
				val, ok := values[name]
				return val, ok
			}); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
			}
		}
		out.Config.ConfigFile, out.Sources["H4R_CONFIG"] = path, SourceEnv
	}
	for _, v := range table() {
		if err := apply(&out, v, SourceEnv, lookup); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Loaded{}, errors.Join(errs...)
	}
	if err := out.Config.Validate(); err != nil {
		return Loaded{}, err
	}
	return out, nil
}

// apply sets v from lookup, if lookup has its name or an alias, and
// records src. The name wins over an alias. A secret may also be given as
// NAME_FILE, the path of a file holding it (as container secrets are
// mounted), so that it never sits in the environment.
func apply(out *Loaded, v variable, src Source, lookup func(string) (string, bool)) error {
	if path, ok := lookup(v.Name + "_FILE"); ok && v.Secret && strings.TrimSpace(path) != "" {
		if raw, ok := lookup(v.Name); !ok || strings.TrimSpace(raw) == "" {
			data, err := os.ReadFile(strings.TrimSpace(path))
			if err != nil {
				return h4r.Errorf(h4r.EINVALID, v.Name+"_FILE", "reading the secret's file: %v", err)
			}
			if err := v.parse(&out.Config, strings.TrimSpace(string(data))); err != nil {
				return err
			}
			out.Sources[v.Name] = src
			return nil
		}
	}
	if raw, ok := lookup(v.Name); ok && strings.TrimSpace(raw) != "" {
		if err := v.parse(&out.Config, strings.TrimSpace(raw)); err != nil {
			return err
		}
		out.Sources[v.Name] = src
		return nil
	}
	for _, alias := range v.Aliases {
		if raw, ok := lookup(alias); ok && strings.TrimSpace(raw) != "" {
			if err := v.parseAlias(&out.Config, strings.TrimSpace(raw)); err != nil {
				return err
			}
			out.Sources[v.Name] = src
			return nil
		}
	}
	return nil
}

// ParseFile reads a configuration file: a YAML mapping from variable names
// (any case; a duration's _MS alias too) to scalar values, or to lists of
// scalars for the comma-separated variables. It returns the values by
// upper-case name. A key that names no variable is an error naming it and
// its line, with the closest variable when one is near. Every error's Field
// is H4R_CONFIG, the variable that named the file.
func ParseFile(data []byte) (map[string]string, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // an empty file
			return map[string]string{}, nil
		}
		return nil, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "not YAML: %v", err)
	}
	if len(doc.Content) == 0 {
		return map[string]string{}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "line %d: want a mapping of variable names to values, such as h4r_addr: 127.0.0.1:8080", root.Line)
	}
	known := map[string]bool{}
	for _, v := range table() {
		known[v.Name] = true
		for _, a := range v.Aliases {
			known[a] = true
		}
	}
	out := map[string]string{}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		name := strings.ToUpper(strings.TrimSpace(k.Value))
		if !known[name] {
			msg := fmt.Sprintf("line %d: unknown key %q", k.Line, k.Value)
			if near := closest(name, known); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.ToLower(near))
			}
			errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "%s", msg))
			continue
		}
		if _, dup := out[name]; dup {
			errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "line %d: %s is set twice", k.Line, k.Value))
			continue
		}
		switch val.Kind {
		case yaml.ScalarNode:
			out[name] = val.Value
		case yaml.SequenceNode:
			var parts []string
			for _, item := range val.Content {
				if item.Kind != yaml.ScalarNode {
					errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "line %d: a list may hold only plain values", item.Line))
					break
				}
				parts = append(parts, item.Value)
			}
			out[name] = strings.Join(parts, ",")
		default:
			errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_CONFIG", "line %d: want a plain value or a list, got a mapping", val.Line))
		}
	}
	return out, errors.Join(errs...)
}

// closest is the known name within edit distance 3 of name, if one is.
func closest(name string, known map[string]bool) string {
	best, bestD := "", 4
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Display is how h4r config shows a value: secrets as "(set, hidden)",
// the password of a URL masked, everything else as it is.
func Display(v Var, value string) string {
	if value == "" {
		return ""
	}
	if v.Secret {
		return "(set, hidden)"
	}
	if strings.Contains(value, "://") {
		if u, err := url.Parse(value); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return value
}

// Values returns every variable's value in c, in the form the
// environment takes it (durations as Go durations), by name.
func (c Config) Values() map[string]string {
	out := map[string]string{}
	for _, v := range table() {
		out[v.Name] = v.format(c)
	}
	return out
}

// format writes v's value in c back as text.
func (v variable) format(c Config) string {
	return formatValue(v.get(c))
}

// formatValue writes a field's value back as text.
func formatValue(x any) string {
	switch t := x.(type) {
	case time.Duration:
		return fmtDuration(t)
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case float64:
		return fmtFloat(t)
	case fmt.Stringer:
		return t.String()
	}
	return fmt.Sprint(x)
}

// fmtDuration writes d in its largest whole unit ("5s", "1m", "500ms"),
// as the defaults are written.
func fmtDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return d.String()
}
