package h4r

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// QueryType selects the candidate generators of a request.
type QueryType string

// Query types. keyword uses full-text only, semantic vectors only, hybrid
// both; causal drives the pack by hops from the anchors.
const (
	QuerySemantic QueryType = "semantic"
	QueryKeyword  QueryType = "keyword"
	QueryHybrid   QueryType = "hybrid"
	QueryCausal   QueryType = "causal"
)

// Limits on a request, checked by Validate.
const (
	DefaultLimit      = 10
	MaxLimit          = 1000
	MaxQueryTextBytes = 4096
	MaxAnchors        = 100
	MaxFilters        = 32
	MaxFilterValues   = 64 // in one list filter (kind, tags)
	MaxTLDRSentences  = 50
	MaxHopsLimit      = 10
	MaxLinkTypes      = 32
	// DefaultQueryType is hybrid: with the built-in learned embedder,
	// fusing vectors into full-text does not lose to keyword on any public
	// set (bench/RESULTS.md). Without an embedder (H4R_EMBEDDER=none) a
	// hybrid query is answered by full-text search and the pack says so.
	DefaultQueryType     = QueryHybrid
	maxFilterValueLength = 1024
)

// What a request does with superseded items (ContextRequest.Superseded).
const (
	SupersededDemote  = "demote"
	SupersededKeep    = "keep"
	SupersededExclude = "exclude"
)

// Query is what the specialist asks.
type Query struct {
	Type    QueryType      `json:"type,omitempty"`
	Text    string         `json:"text"`
	Filters map[string]any `json:"filters,omitempty"`
	// Expand turns pseudo-relevance feedback on or off for this request's
	// full-text search (nil: the server's default, H4R_QUERY_EXPANSION):
	// the query is expanded with the words of its top full-text hits and
	// asked again.
	Expand *bool `json:"expand,omitempty"`
}

// Which items explainability.items explains (ContextRequest.Explain).
const (
	// ExplainKept explains the delivered items only: a ten-item pack
	// stays small (the explanations of the up to a hundred candidates that
	// were cut were half of its bytes). The default.
	ExplainKept = "kept"
	// ExplainAll explains every ranked candidate the caller may learn of,
	// with why each one that was not kept was left out.
	ExplainAll = "all"
)

// Budget caps a context pack. Zero means "the server's configured value".
type Budget struct {
	MaxBytes  int `json:"maxBytes,omitempty"`
	MaxTokens int `json:"maxTokens,omitempty"`
	MaxItems  int `json:"maxItems,omitempty"`
}

// ContextRequest is the payload of an A2A ContextRequest envelope and the
// body of POST /v1/context-pack (which may add Specialist). Optional fields
// are pointers or zero values meaning "use the configured default".
// Superseded says what becomes of an item that a newer one the caller may
// see supersedes: demote, keep (ranked as any other, its superseded_by
// still told) or exclude; empty: demote, unless the query asks about an
// earlier time ("before", "used to", …), which keeps. ValidAt (RFC 3339) leaves out
// every item whose validFrom/validUntil interval does not hold it.
type ContextRequest struct {
	Specialist    *Specialist        `json:"specialist,omitempty"`
	Query         Query              `json:"query"`
	Limit         int                `json:"limit,omitempty"`
	IncludeScores *bool              `json:"include_scores,omitempty"`
	Weights       map[string]float64 `json:"weights,omitempty"`
	Anchors       []string           `json:"anchors,omitempty"`
	MaxHops       int                `json:"max_hops,omitempty"`
	Directed      bool               `json:"directed,omitempty"`
	LinkTypes     []string           `json:"link_types,omitempty"`
	Superseded    string             `json:"superseded,omitempty"`
	ValidAt       string             `json:"valid_at,omitempty"`
	Budget        *Budget            `json:"budget,omitempty"`
	MinScore      float64            `json:"min_score,omitempty"`
	IncludeGraph  *bool              `json:"include_graph,omitempty"`
	TLDRSentences *int               `json:"tldr_sentences,omitempty"`
	// AsOf is when the question is asked (RFC 3339): the moment relative
	// times in the query ("two weeks ago", "last May") count from, and the
	// clock recency is measured against. Empty: the service's clock.
	AsOf string `json:"as_of,omitempty"`
	// Explain is ExplainKept (default when empty) or ExplainAll.
	Explain string `json:"explain,omitempty"`
}

// Plan is a validated request, what the engine runs: the request with its
// defaults applied (query type, limit) and its filters parsed. A request is
// planned once, where it enters (ContextRequest.Plan), and never validated
// again.
type Plan struct {
	Request ContextRequest
	Filters Filters
	// AsOf is the request's as_of, parsed; zero when it gives none.
	AsOf time.Time
	// Audit: the caller may see what policy hid — the id, reason and
	// signals of every item policy denied, and of items under min_score,
	// which never reach the policy. Without it a pack reports those only as
	// counts. The server sets it from the caller's key (route class audit or
	// admin), never from the request.
	Audit bool
	// BusyError: when no pack slot frees within half the request deadline,
	// the caller wants an unavailable error rather than an empty degraded
	// pack. The server sets it from "Prefer: busy=503".
	BusyError bool
	// ValidAt is the request's valid_at, parsed; zero when it gives none.
	ValidAt time.Time
}

// Plan validates the request once and returns it planned. field is the
// JSON path of the request in its envelope ("payload" for A2A, "" for a
// context-pack body) and prefixes every offending field in errors. The
// request itself is not changed.
func (r *ContextRequest) Plan(field string) (*Plan, error) {
	filters, err := r.validate(field)
	if err != nil {
		return nil, err
	}
	p := &Plan{Request: *r, Filters: filters}
	if r.AsOf != "" {
		p.AsOf, _ = time.Parse(time.RFC3339, r.AsOf) // checked by validate
	}
	if p.Request.Query.Type == "" {
		p.Request.Query.Type = DefaultQueryType
	}
	if r.ValidAt != "" {
		p.ValidAt, _ = time.Parse(time.RFC3339, r.ValidAt) // checked by validate
	}
	if p.Request.Limit == 0 {
		p.Request.Limit = DefaultLimit
	}
	if p.Request.Explain == "" {
		p.Request.Explain = ExplainKept
	}
	return p, nil
}

// validate checks the request without changing it and returns its parsed
// filters.
func (r *ContextRequest) validate(field string) (Filters, error) {
	at := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	switch r.Query.Type {
	case "", QuerySemantic, QueryKeyword, QueryHybrid, QueryCausal:
	default:
		return Filters{}, Errorf(EINVALID, at("query.type"), "unknown query type %q (want semantic, keyword, hybrid or causal)", r.Query.Type)
	}
	if len(r.Query.Text) > MaxQueryTextBytes {
		return Filters{}, Errorf(EINVALID, at("query.text"), "query text is %d bytes, the limit is %d", len(r.Query.Text), MaxQueryTextBytes)
	}
	if strings.TrimSpace(r.Query.Text) == "" && !(r.Query.Type == QueryCausal && len(r.Anchors) > 0) {
		return Filters{}, Errorf(EINVALID, at("query.text"), "query text is required (a causal query may give anchors instead)")
	}
	filters, err := ParseFilters(at("query.filters"), r.Query.Filters)
	if err != nil {
		return Filters{}, err
	}
	switch {
	case r.Limit < 0:
		return Filters{}, Errorf(EINVALID, at("limit"), "limit must be >= 0, got %d", r.Limit)
	case r.Limit > MaxLimit:
		return Filters{}, Errorf(EINVALID, at("limit"), "limit must be <= %d, got %d", MaxLimit, r.Limit)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Weights)) { // the same error for the same input
		v := r.Weights[name]
		if _, ok := ParseSignal(name); !ok {
			return Filters{}, Errorf(EINVALID, at("weights."+name), "unknown signal %q (want one of relevance, recency, frequency, importance, causality, novelty, trust, sensitivity)", name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Filters{}, Errorf(EINVALID, at("weights."+name), "weight must be a finite number >= 0, got %v", v)
		}
	}
	if len(r.Anchors) > MaxAnchors {
		return Filters{}, Errorf(EINVALID, at("anchors"), "at most %d anchors, got %d", MaxAnchors, len(r.Anchors))
	}
	for i, a := range r.Anchors {
		switch {
		case strings.TrimSpace(a) == "":
			return Filters{}, Errorf(EINVALID, fmt.Sprintf("%s[%d]", at("anchors"), i), "anchor id must not be empty")
		case len(a) > MaxIDBytes:
			return Filters{}, Errorf(EINVALID, fmt.Sprintf("%s[%d]", at("anchors"), i), "an anchor is an item id, at most %d bytes; got %d", MaxIDBytes, len(a))
		case strings.IndexByte(a, 0) >= 0:
			// As in a filter: Postgres cannot hold it, and every store
			// refuses it alike.
			return Filters{}, Errorf(EINVALID, fmt.Sprintf("%s[%d]", at("anchors"), i), "anchor id contains a NUL character")
		}
	}
	if r.MaxHops < 0 || r.MaxHops > MaxHopsLimit {
		return Filters{}, Errorf(EINVALID, at("max_hops"), "max_hops must be between 0 and %d, got %d", MaxHopsLimit, r.MaxHops)
	}
	if len(r.LinkTypes) > MaxLinkTypes {
		return Filters{}, Errorf(EINVALID, at("link_types"), "at most %d link types, got %d", MaxLinkTypes, len(r.LinkTypes))
	}
	for i, t := range r.LinkTypes {
		if strings.TrimSpace(t) == "" || len(t) > MaxIDBytes {
			return Filters{}, Errorf(EINVALID, fmt.Sprintf("%s[%d]", at("link_types"), i), "a link type is a non-empty name of at most %d bytes", MaxIDBytes)
		}
	}
	switch r.Superseded {
	case "", SupersededDemote, SupersededKeep, SupersededExclude:
	default:
		return Filters{}, Errorf(EINVALID, at("superseded"), "unknown superseded %q (want demote, keep or exclude)", r.Superseded)
	}
	if r.ValidAt != "" {
		if _, err := time.Parse(time.RFC3339, r.ValidAt); err != nil || len(r.ValidAt) > 64 {
			return Filters{}, Errorf(EINVALID, at("valid_at"), "valid_at must be an RFC 3339 timestamp such as 2026-11-20T10:00:00Z, got %q", truncate(r.ValidAt, 64))
		}
	}
	if b := r.Budget; b != nil {
		for name, v := range map[string]int{"maxBytes": b.MaxBytes, "maxTokens": b.MaxTokens, "maxItems": b.MaxItems} {
			if v < 0 {
				return Filters{}, Errorf(EINVALID, at("budget."+name), "budget must be >= 0, got %d", v)
			}
		}
	}
	if math.IsNaN(r.MinScore) || r.MinScore < 0 || r.MinScore > 1 {
		return Filters{}, Errorf(EINVALID, at("min_score"), "min_score must be in [0, 1], got %v", r.MinScore)
	}
	if n := r.TLDRSentences; n != nil && (*n < 0 || *n > MaxTLDRSentences) {
		return Filters{}, Errorf(EINVALID, at("tldr_sentences"), "tldr_sentences must be between 0 and %d, got %d", MaxTLDRSentences, *n)
	}
	if r.AsOf != "" {
		if len(r.AsOf) > 64 {
			return Filters{}, Errorf(EINVALID, at("as_of"), "as_of is an RFC 3339 timestamp, at most 64 bytes; got %d", len(r.AsOf))
		}
		if _, err := time.Parse(time.RFC3339, r.AsOf); err != nil {
			return Filters{}, Errorf(EINVALID, at("as_of"), "as_of must be an RFC 3339 timestamp such as 2026-11-20T10:00:00Z, got %q", r.AsOf)
		}
	}
	switch r.Explain {
	case "", ExplainKept, ExplainAll:
	default:
		return Filters{}, Errorf(EINVALID, at("explain"), "unknown explain %q (want %s or %s)", r.Explain, ExplainKept, ExplainAll)
	}
	if s := r.Specialist; s != nil {
		if strings.TrimSpace(s.ID) == "" {
			return Filters{}, Errorf(EINVALID, at("specialist.id"), "specialist id must not be empty")
		}
		if err := s.CheckGroups(at("specialist")); err != nil {
			return Filters{}, err
		}
	}
	return filters, nil
}

// Filters narrow the candidates. They come from query.filters, where the
// reserved keys "kind" (string or list), "tags" (list, all required),
// "anyTags" (list, at least one present), "createdAfter" and
// "createdBefore" (RFC 3339) have their own meaning and every other key is
// an equality test on a metadata value (string, number or boolean).
type Filters struct {
	Kinds []string
	Tags  []string
	// AnyTags passes an item that has at least one of them (with Tags, an
	// item must pass both). It lets one request ask for several areas,
	// where Tags would require them all.
	AnyTags       []string
	CreatedAfter  time.Time
	CreatedBefore time.Time
	Metadata      map[string]any
}

// Empty reports whether f filters nothing.
func (f Filters) Empty() bool {
	return len(f.Kinds) == 0 && len(f.Tags) == 0 && len(f.AnyTags) == 0 && f.CreatedAfter.IsZero() && f.CreatedBefore.IsZero() && len(f.Metadata) == 0
}

// ValidMetadataKey reports whether key may name a metadata value in a
// filter: ^[A-Za-z_][A-Za-z0-9_-]{0,63}$. Stores build JSON paths from it, so
// it must not hold quotes or path syntax; they check it again because
// Filters may be built in Go rather than by ParseFilters.
func ValidMetadataKey(key string) bool {
	if len(key) == 0 || len(key) > 64 {
		return false
	}
	for i, r := range key {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && (r == '-' || '0' <= r && r <= '9'):
		default:
			return false
		}
	}
	return true
}

// ParseFilters turns a query.filters object into Filters. field names the
// object in errors ("payload.query.filters").
func ParseFilters(field string, raw map[string]any) (Filters, error) {
	var f Filters
	if len(raw) > MaxFilters {
		return f, Errorf(EINVALID, field, "at most %d filters, got %d", MaxFilters, len(raw))
	}
	for key, v := range raw {
		at := field + "." + key
		switch key {
		case "kind":
			kinds, err := stringList(at, v)
			if err != nil {
				return f, err
			}
			f.Kinds = kinds
		case "tags":
			tags, err := stringList(at, v)
			if err != nil {
				return f, err
			}
			f.Tags = tags
		case "anyTags":
			tags, err := stringList(at, v)
			if err != nil {
				return f, err
			}
			f.AnyTags = tags
		case "createdAfter", "createdBefore":
			s, ok := v.(string)
			if !ok {
				return f, Errorf(EINVALID, at, "must be an RFC 3339 timestamp string")
			}
			if err := filterString(at, s); err != nil {
				return f, err
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return f, Errorf(EINVALID, at, "must be an RFC 3339 timestamp such as 2026-11-20T10:00:00Z, got %q", s)
			}
			if key == "createdAfter" {
				f.CreatedAfter = t
			} else {
				f.CreatedBefore = t
			}
		default:
			if !ValidMetadataKey(key) {
				return f, Errorf(EINVALID, at, `filter key must match ^[A-Za-z_][A-Za-z0-9_\-]{0,63}$`)
			}
			switch x := v.(type) {
			case string:
				if err := filterString(at, x); err != nil {
					return f, err
				}
			case float64, bool:
			default:
				return f, Errorf(EINVALID, at, "metadata filter value must be a string, number or boolean")
			}
			if f.Metadata == nil {
				f.Metadata = map[string]any{}
			}
			f.Metadata[key] = v
		}
	}
	return f, nil
}

// filterString checks a string a filter compares: bounded, and without
// NUL, which Postgres cannot hold in text (it answered with an error that
// degraded the pack), so that every store refuses it alike.
func filterString(field, s string) error {
	if len(s) > maxFilterValueLength {
		return Errorf(EINVALID, field, "filter value is longer than %d bytes", maxFilterValueLength)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Errorf(EINVALID, field, "filter value contains a NUL character")
	}
	return nil
}

// stringList reads a list filter (kind, tags, anyTags): one string or a list of at
// most MaxFilterValues.
func stringList(field string, v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		if err := filterString(field, x); err != nil {
			return nil, err
		}
		return []string{x}, nil
	case []any:
		if len(x) > MaxFilterValues {
			return nil, Errorf(EINVALID, field, "at most %d values, got %d", MaxFilterValues, len(x))
		}
		out := make([]string, 0, len(x))
		for i, e := range x {
			at := fmt.Sprintf("%s[%d]", field, i)
			s, ok := e.(string)
			if !ok {
				return nil, Errorf(EINVALID, at, "must be a string")
			}
			if err := filterString(at, s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, Errorf(EINVALID, field, "must be a string or a list of strings")
}

// truncate cuts s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
