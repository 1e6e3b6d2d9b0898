package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r/internal/jsonstrict"
)

// MappingFile is the name of the optional mapping file in a dataset folder.
const MappingFile = "h4r-mapping.json"

// MappingVersion is the only mapping file version this build reads.
const MappingVersion = 1

// Mapping says which extra fields of a BEIR corpus (and queries) become
// parts of the item model. Every field is optional; an empty name means the
// dataset has no such field. A dataset folder without h4r-mapping.json gets
// DefaultMapping, which is what makes the shared collections load as they
// are (cisi's xrefs are citation links).
type Mapping struct {
	Version int `json:"version"`
	// CreatedAt names a document field holding an RFC 3339 string or Unix
	// seconds; it becomes metadata.createdAt (the recency signal).
	CreatedAt string `json:"createdAt,omitempty"`
	// Links names a document field holding a list of link targets: ids,
	// [target, …] arrays (cisi's [doc_id, kind, n]) or {"target", "type"}
	// objects. Self-links and repeats are dropped.
	Links string `json:"links,omitempty"`
	// LinkType is the type of links given without one (default "cites").
	LinkType string `json:"linkType,omitempty"`
	// Importance, Trust, Sensitivity and Novelty name numeric fields in
	// [0, 1] that become the metadata scores of the same name.
	Importance  string `json:"importance,omitempty"`
	Trust       string `json:"trust,omitempty"`
	Sensitivity string `json:"sensitivity,omitempty"`
	Novelty     string `json:"novelty,omitempty"`
	// AccessCount names a whole-number field: how often the item was used
	// before the benchmark. The loader replays that many deliveries through
	// the store (the store owns accessCount), so the frequency signal is real.
	AccessCount string `json:"accessCount,omitempty"`
	// Scope names a field present in documents and queries: each query only
	// sees documents of its own scope (e.g. one conversation per query). It
	// is sent as a query filter on metadata.scope.
	Scope string `json:"scope,omitempty"`
	// Category names a query field by which quality is also reported.
	// A dataset with sessions and no category field is reported by
	// single-session and multi-session questions (where the evidence is).
	Category string `json:"category,omitempty"`
	// Session names a document field holding the conversation session a
	// turn belongs to; it becomes metadata.session.
	Session string `json:"session,omitempty"`
	// Turn names a whole-number document field: the turn's order in its
	// session. Each turn then gets a follows link to the turn before it in
	// the same session (and scope).
	Turn string `json:"turn,omitempty"`
	// QueryDate names a query field holding when the question is asked
	// (RFC 3339 or Unix seconds); it is sent as the request's as_of.
	QueryDate string `json:"queryDate,omitempty"`
	// Now is the clock of the run (RFC 3339); recency is measured against
	// it. Empty: the latest createdAt in the corpus, else DefaultNow.
	Now string `json:"now,omitempty"`
}

// DefaultNow is the clock of a run whose corpus has no dates: fixed, so
// that runs are reproducible.
func DefaultNow() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// DefaultMapping is used when a dataset folder has no mapping file.
func DefaultMapping() Mapping {
	return Mapping{Version: MappingVersion, Links: "xrefs", LinkType: "cites"}
}

// builtinMappings are the mappings of the shared collections whose extra
// fields cannot be told from their names alone, keyed by folder name; a
// folder's own h4r-mapping.json overrides them.
func builtinMappings() map[string]Mapping {
	return map[string]Mapping{
		// Turns of three chat histories: each question is asked within its
		// own history ("conv"), at its "date".
		"longmemeval-mini": {Version: MappingVersion, CreatedAt: "date", Scope: "conv", Session: "session",
			Turn: "turn", LinkType: "follows", QueryDate: "date"},
	}
}

// ScopeKey is the metadata key (and query filter) a scope is stored under.
const ScopeKey = "scope"

// ParseMapping decodes a mapping file strictly: an unknown key is an error
// naming it, so that a typo does not silently drop a signal.
func ParseMapping(data []byte, name string) (Mapping, error) {
	var m Mapping
	if err := jsonstrict.Decode(data, &m, ""); err != nil {
		return m, fmt.Errorf("%s: %w", name, err)
	}
	if m.Version != MappingVersion {
		return m, fmt.Errorf("%s: version: want %d, got %d", name, MappingVersion, m.Version)
	}
	if m.Now != "" {
		if _, err := time.Parse(time.RFC3339, m.Now); err != nil {
			return m, fmt.Errorf("%s: now: want RFC 3339: %w", name, err)
		}
	}
	if m.LinkType == "" {
		m.LinkType = "cites"
	}
	return m, nil
}

// readMapping reads dir/h4r-mapping.json, or returns DefaultMapping when
// there is none.
func readMapping(dir string) (Mapping, error) {
	path := filepath.Join(dir, MappingFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if m, ok := builtinMappings()[filepath.Base(dir)]; ok {
			return m, nil
		}
		return DefaultMapping(), nil
	}
	if err != nil {
		return Mapping{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return ParseMapping(data, path)
}

// applyMapping fills d's mapped fields from raw and removes them from raw.
// Errors name the field.
func (m Mapping) applyMapping(raw map[string]json.RawMessage, d *Doc) error {
	take := func(field string) (json.RawMessage, bool) {
		if field == "" {
			return nil, false
		}
		v, ok := raw[field]
		if ok {
			delete(raw, field)
		}
		return v, ok && string(v) != "null"
	}
	if v, ok := take(m.CreatedAt); ok {
		t, err := parseTime(v)
		if err != nil {
			return fmt.Errorf("%q: %w", m.CreatedAt, err)
		}
		d.CreatedAt = t
	}
	if v, ok := take(m.Links); ok {
		links, err := parseLinks(v, d.ID, m.LinkType)
		if err != nil {
			return fmt.Errorf("%q: %w", m.Links, err)
		}
		d.Links = links
	}
	for _, s := range []struct {
		field string
		dst   **float64
	}{{m.Importance, &d.Importance}, {m.Trust, &d.Trust}, {m.Sensitivity, &d.Sensitivity}, {m.Novelty, &d.Novelty}} {
		if v, ok := take(s.field); ok {
			x, err := parseNumber(v)
			if err != nil {
				return fmt.Errorf("%q: %w", s.field, err)
			}
			if x < 0 || x > 1 {
				return fmt.Errorf("%q: want a number in [0, 1], got %v", s.field, x)
			}
			*s.dst = &x
		}
	}
	if v, ok := take(m.AccessCount); ok {
		x, err := parseNumber(v)
		if err != nil {
			return fmt.Errorf("%q: %w", m.AccessCount, err)
		}
		if x < 0 || x != math.Trunc(x) || x > 1e6 {
			return fmt.Errorf("%q: want a whole number in [0, 1000000], got %v", m.AccessCount, x)
		}
		d.AccessCount = int64(x)
	}
	if v, ok := take(m.Session); ok {
		s, err := parseScalarString(v)
		if err != nil {
			return fmt.Errorf("%q: %w", m.Session, err)
		}
		d.Session = s
	}
	if v, ok := take(m.Turn); ok {
		x, err := parseNumber(v)
		if err != nil {
			return fmt.Errorf("%q: %w", m.Turn, err)
		}
		if x < 0 || x != math.Trunc(x) || x > 1e9 {
			return fmt.Errorf("%q: want a whole number in [0, 1000000000], got %v", m.Turn, x)
		}
		d.Turn = int(x)
		d.HasTurn = true
	}
	if v, ok := take(m.Scope); ok {
		s, err := parseScalarString(v)
		if err != nil {
			return fmt.Errorf("%q: %w", m.Scope, err)
		}
		d.Scope = s
	}
	return nil
}

// parseTime reads an RFC 3339 string or Unix seconds.
func parseTime(v json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("want an RFC 3339 time or Unix seconds: %w", err)
		}
		return t.UTC(), nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or Unix seconds, got %s", truncate(v))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// parseNumber reads a JSON number or a string holding one.
func parseNumber(v json.RawMessage) (float64, error) {
	var f float64
	if err := json.Unmarshal(v, &f); err == nil {
		return f, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want a number, got %s", truncate(v))
}

// parseScalarString reads a string, or a number written as one.
func parseScalarString(v json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var f json.Number
	if err := json.Unmarshal(v, &f); err == nil {
		return f.String(), nil
	}
	return "", fmt.Errorf("want a string or a number, got %s", truncate(v))
}

// parseLinks reads a list of ids, of [target, …] arrays or of {"target",
// "type"} objects. Self-links and repeated (target, type) pairs are dropped.
func parseLinks(v json.RawMessage, self, defaultType string) ([]Link, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("want a list of links, got %s", truncate(v))
	}
	var out []Link
	seen := map[Link]bool{}
	for i, e := range list {
		l := Link{Type: defaultType}
		var arr []json.RawMessage
		var obj struct {
			Target json.RawMessage `json:"target"`
			Type   string          `json:"type"`
		}
		switch {
		case json.Unmarshal(e, &arr) == nil:
			if len(arr) == 0 {
				return nil, fmt.Errorf("[%d]: an empty link array has no target", i)
			}
			t, err := parseScalarString(arr[0])
			if err != nil {
				return nil, fmt.Errorf("[%d][0]: %w", i, err)
			}
			l.Target = t
		case len(e) > 0 && e[0] == '{' && json.Unmarshal(e, &obj) == nil:
			if obj.Target == nil {
				return nil, fmt.Errorf("[%d]: missing \"target\"", i)
			}
			t, err := parseScalarString(obj.Target)
			if err != nil {
				return nil, fmt.Errorf("[%d].target: %w", i, err)
			}
			l.Target = t
			if obj.Type != "" {
				l.Type = obj.Type
			}
		default:
			t, err := parseScalarString(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l.Target = t
		}
		l.Target = strings.TrimSpace(l.Target)
		if l.Target == "" {
			return nil, fmt.Errorf("[%d]: empty link target", i)
		}
		if l.Target == self || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out, nil
}

func truncate(v json.RawMessage) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
