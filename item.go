package h4r

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults for metadata scores an item does not give. They are neutral: an
// item without a trust score is neither trusted nor denied for low trust.
const (
	DefaultImportance  = 0.5
	DefaultTrust       = 0.5
	DefaultSensitivity = 0.0
	DefaultNovelty     = 0.0
)

// Limits on one ingested item.
const (
	MaxIDBytes       = 256
	MaxTextBytes     = 64 << 10
	MaxItemBytes     = 1 << 20 // the whole item as JSON
	MaxLinks         = 256
	MaxTags          = 64
	MaxMetadataDepth = 8
	// MaxGroups bounds an item's restrictedToGroups and a specialist's
	// authorizedGroups.
	MaxGroups = 64
)

// Item is one memory. Text is what search indexes; Content is delivered to
// the agent and is where redaction paths ($.content.…) point.
type Item struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind,omitempty"`
	Text     string         `json:"text"`
	Content  map[string]any `json:"content,omitempty"`
	Metadata Metadata       `json:"metadata"`
	Links    []Link         `json:"links,omitempty"`
}

// Link is a directed, typed edge from the item that holds it to Target.
// Target is an item id, or the id of an entity that is not an item (a file
// path, an epic id); TargetType says which kind of entity it names (empty:
// an item). Context says, in a sentence, why the link matters.
type Link struct {
	Type       string  `json:"type"`
	Target     string  `json:"target"`
	TargetType string  `json:"targetType,omitempty"`
	Strength   float64 `json:"strength,omitempty"`
	Context    string  `json:"context,omitempty"`
}

// Link types of decision traces (docs/decisions.md). Any other non-empty
// type is accepted too: the list is extendable, these are the ones H4R's
// own queries use.
const (
	LinkCitesPrecedent       = "cites_precedent"
	LinkAppliesPattern       = "applies_pattern"
	LinkSimilarTo            = "similar_to"
	LinkResolvesConflictFrom = "resolves_conflict_from"
	LinkLearnedFrom          = "learned_from"
	LinkAssignsFile          = "assigns_file"
	LinkOutcomeOf            = "outcome_of"
)

// Target types of links (target_entity_type in docs/decisions.md),
// extendable like link types. TargetItem, the empty string, is an item id.
const (
	TargetItem     = ""
	TargetEpic     = "epic"
	TargetPattern  = "pattern"
	TargetFile     = "file"
	TargetAgent    = "agent"
	TargetMemory   = "memory"
	TargetTrace    = "trace"
	TargetDecision = "decision"
)

// Limits on a link's own fields.
const (
	MaxLinkContextBytes = 1024
	MaxTargetTypeBytes  = 64
)

// ValidateLink checks one link; field is its path ("links[2]").
func ValidateLink(l Link, field string) error {
	switch {
	case strings.TrimSpace(l.Target) == "":
		return Errorf(EINVALID, field+".target", "link target is required")
	case len(l.Target) > MaxIDBytes:
		return Errorf(EINVALID, field+".target", "a link target is an item or entity id, at most %d bytes; got %d", MaxIDBytes, len(l.Target))
	case strings.TrimSpace(l.Type) == "":
		return Errorf(EINVALID, field+".type", "link type is required (caused_by, fixes, cites_precedent, …)")
	case math.IsNaN(l.Strength) || l.Strength < 0 || l.Strength > 1:
		return Errorf(EINVALID, field+".strength", "strength must be in [0, 1], got %v", l.Strength)
	case len(l.TargetType) > MaxTargetTypeBytes || !validTargetType(l.TargetType):
		return Errorf(EINVALID, field+".targetType", "targetType is a lower-case word (epic, pattern, file, agent, memory, trace, decision, …) of at most %d bytes, got %q", MaxTargetTypeBytes, l.TargetType)
	case len(l.Context) > MaxLinkContextBytes:
		return Errorf(EINVALID, field+".context", "context is %d bytes, the limit is %d", len(l.Context), MaxLinkContextBytes)
	case !utf8.ValidString(l.Context):
		return Errorf(EINVALID, field+".context", "context is not valid UTF-8")
	}
	return nil
}

// validTargetType: empty, or [a-z][a-z0-9_]*.
func validTargetType(t string) bool {
	for i, r := range t {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r == '_' || r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// Metadata holds the well-known metadata keys as fields and every other key
// in Extra. It marshals back to one flat JSON object, as policies see it.
// Score pointers are nil when the item did not give them; the accessors
// return the documented defaults.
type Metadata struct {
	CreatedAt          time.Time
	Importance         *float64
	Trust              *float64
	Sensitivity        *float64
	Novelty            *float64
	ContainsPII        bool
	PIIFields          []string
	TextClean          bool // the text holds no PII though ContainsPII is set: only PIIFields are redacted
	HasCredentials     bool
	RestrictedToGroups []string
	Tags               []string
	Source             string
	// ValidFrom and ValidUntil bound when the item's statement holds
	// (ValidAt); zero: unbounded on that side.
	ValidFrom  time.Time
	ValidUntil time.Time

	// Maintained by the store; ignored on ingest.
	UpdatedAt      time.Time
	Version        int
	AccessCount    int64
	LastAccessedAt time.Time
	ByteSize       int
	Tokens         int

	// Extra holds every other key (test_type, status, …), used by filters
	// and policies.
	Extra map[string]any
}

// ImportanceValue, TrustValue, SensitivityValue and NoveltyValue return the
// score or, when the item did not give it, its default.
func (m Metadata) ImportanceValue() float64  { return valueOr(m.Importance, DefaultImportance) }
func (m Metadata) TrustValue() float64       { return valueOr(m.Trust, DefaultTrust) }
func (m Metadata) SensitivityValue() float64 { return valueOr(m.Sensitivity, DefaultSensitivity) }
func (m Metadata) NoveltyValue() float64     { return valueOr(m.Novelty, DefaultNovelty) }

func valueOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// isWellKnown reports whether key is one of the metadata keys that are
// fields of Metadata.
func isWellKnown(key string) bool {
	return slices.Contains(wellKnownKeys(), key)
}

// wellKnownKeys lists the keys isWellKnown accepts, for wellKnownFold.
func wellKnownKeys() []string {
	return []string{"createdAt", "importance", "trust", "sensitivity", "novelty", "containsPII", "piiFields",
		"textClean", "hasCredentials", "restrictedToGroups", "tags", "source", "validFrom", "validUntil",
		"updatedAt", "version", "accessCount", "lastAccessedAt", "byteSize", "tokens"}
}

// memberPath is key as a relative JSON path segment: the key itself when
// it is a plain name, else ["key"] (its JSON string in brackets), the form
// jsonstrict writes for such keys.
func memberPath(key string) string {
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b, _ := json.Marshal(key) // a string always encodes
			return "[" + string(b) + "]"
		}
	}
	return key
}

// wellKnownFold returns the well-known key equal to key up to case, white
// space around it, and invisible characters in it (zero-width spaces and
// joiners, the byte-order mark, soft hyphens: Unicode format characters).
func wellKnownFold(key string) (string, bool) {
	visible := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.TrimSpace(key))
	for _, k := range wellKnownKeys() {
		if strings.EqualFold(k, visible) {
			return k, true
		}
	}
	return "", false
}

// metadataJSON is the wire form of the well-known keys.
type metadataJSON struct {
	CreatedAt          *time.Time `json:"createdAt,omitempty"`
	Importance         *float64   `json:"importance,omitempty"`
	Trust              *float64   `json:"trust,omitempty"`
	Sensitivity        *float64   `json:"sensitivity,omitempty"`
	Novelty            *float64   `json:"novelty,omitempty"`
	ContainsPII        bool       `json:"containsPII"`
	PIIFields          []string   `json:"piiFields,omitempty"`
	TextClean          bool       `json:"textClean,omitempty"`
	HasCredentials     bool       `json:"hasCredentials"`
	RestrictedToGroups []string   `json:"restrictedToGroups,omitempty"`
	Tags               []string   `json:"tags,omitempty"`
	Source             string     `json:"source,omitempty"`
	ValidFrom          *time.Time `json:"validFrom,omitempty"`
	ValidUntil         *time.Time `json:"validUntil,omitempty"`
	UpdatedAt          *time.Time `json:"updatedAt,omitempty"`
	Version            int        `json:"version,omitempty"`
	AccessCount        int64      `json:"accessCount"`
	LastAccessedAt     *time.Time `json:"lastAccessedAt,omitempty"`
	ByteSize           int        `json:"byteSize,omitempty"`
	Tokens             int        `json:"tokens,omitempty"`
}

// field is the field of w that the well-known key decodes into, as
// encoding/json would decode {key: value} into w (nil for any other key):
// decoding the value into it directly spares a store an encoding and a
// struct decode per key of every item it reads.
func (w *metadataJSON) field(key string) any {
	switch key {
	case "createdAt":
		return &w.CreatedAt
	case "importance":
		return &w.Importance
	case "trust":
		return &w.Trust
	case "sensitivity":
		return &w.Sensitivity
	case "novelty":
		return &w.Novelty
	case "containsPII":
		return &w.ContainsPII
	case "piiFields":
		return &w.PIIFields
	case "textClean":
		return &w.TextClean
	case "hasCredentials":
		return &w.HasCredentials
	case "restrictedToGroups":
		return &w.RestrictedToGroups
	case "tags":
		return &w.Tags
	case "source":
		return &w.Source
	case "validFrom":
		return &w.ValidFrom
	case "validUntil":
		return &w.ValidUntil
	case "updatedAt":
		return &w.UpdatedAt
	case "version":
		return &w.Version
	case "accessCount":
		return &w.AccessCount
	case "lastAccessedAt":
		return &w.LastAccessedAt
	case "byteSize":
		return &w.ByteSize
	case "tokens":
		return &w.Tokens
	}
	return nil
}

// MarshalJSON writes one flat object: the well-known keys, then Extra.
func (m Metadata) MarshalJSON() ([]byte, error) {
	w := metadataJSON{
		Importance: m.Importance, Trust: m.Trust, Sensitivity: m.Sensitivity, Novelty: m.Novelty,
		ContainsPII: m.ContainsPII, PIIFields: m.PIIFields, TextClean: m.TextClean, HasCredentials: m.HasCredentials,
		RestrictedToGroups: m.RestrictedToGroups, Tags: m.Tags, Source: m.Source,
		Version: m.Version, AccessCount: m.AccessCount, ByteSize: m.ByteSize, Tokens: m.Tokens,
	}
	if !m.CreatedAt.IsZero() {
		w.CreatedAt = &m.CreatedAt
	}
	if !m.UpdatedAt.IsZero() {
		w.UpdatedAt = &m.UpdatedAt
	}
	if !m.ValidFrom.IsZero() {
		w.ValidFrom = &m.ValidFrom
	}
	if !m.ValidUntil.IsZero() {
		w.ValidUntil = &m.ValidUntil
	}
	if !m.LastAccessedAt.IsZero() {
		w.LastAccessedAt = &m.LastAccessedAt
	}
	known, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(m.Extra) == 0 {
		return known, nil
	}
	extra, err := json.Marshal(m.Extra) // map keys come out sorted
	if err != nil {
		return nil, err
	}
	// Merge {"a":…} and {"b":…} into {"a":…,"b":…}.
	var buf bytes.Buffer
	buf.Write(known[:len(known)-1])
	buf.WriteByte(',')
	buf.Write(extra[1:])
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a flat object. Errors name the offending key relative
// to the metadata ("trust", "tags[2]"); jsonstrict.Decode prefixes the path
// of the metadata itself ("items[3].metadata.trust").
func (m *Metadata) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Errorf(EINVALID, "", "metadata must be a JSON object")
	}
	var w metadataJSON
	*m = Metadata{}
	for _, key := range slices.Sorted(maps.Keys(raw)) { // the same error for the same input
		val := raw[key]
		if !isWellKnown(key) {
			// A well-known key in another case ("HasCredentials") would land
			// in Extra, where no policy looks: an item could hide its
			// credentials or sensitivity by a typo. Refuse it instead.
			if known, ok := wellKnownFold(key); ok {
				if strings.EqualFold(known, key) {
					return Errorf(EINVALID, key, "metadata keys are case-sensitive: did you mean %q?", known)
				}
				return Errorf(EINVALID, memberPath(key), "metadata key %q differs from the policy key %q only by white space or invisible characters: write %q", key, known, known)
			}
			var v any
			if err := json.Unmarshal(val, &v); err != nil {
				return Errorf(EINVALID, key, "invalid JSON value: %s", strings.TrimPrefix(err.Error(), "json: "))
			}
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[key] = v
			continue
		}
		if err := noNullElement(key, val); err != nil {
			return err
		}
		if err := json.Unmarshal(val, w.field(key)); err != nil {
			return Errorf(EINVALID, key, "wrong type for %s: %s", key, jsonTypeHint(key))
		}
	}
	w.into(m)
	return nil
}

// into sets m's well-known fields to w's (m.Extra is left as it is).
func (w *metadataJSON) into(m *Metadata) {
	if w.CreatedAt != nil {
		m.CreatedAt = *w.CreatedAt
	}
	if w.UpdatedAt != nil {
		m.UpdatedAt = *w.UpdatedAt
	}
	if w.LastAccessedAt != nil {
		m.LastAccessedAt = *w.LastAccessedAt
	}
	if w.ValidFrom != nil {
		m.ValidFrom = *w.ValidFrom
	}
	if w.ValidUntil != nil {
		m.ValidUntil = *w.ValidUntil
	}
	m.Importance, m.Trust, m.Sensitivity, m.Novelty = w.Importance, w.Trust, w.Sensitivity, w.Novelty
	m.ContainsPII, m.PIIFields, m.TextClean, m.HasCredentials = w.ContainsPII, w.PIIFields, w.TextClean, w.HasCredentials
	m.RestrictedToGroups, m.Tags, m.Source = w.RestrictedToGroups, w.Tags, w.Source
	m.Version, m.AccessCount, m.ByteSize, m.Tokens = w.Version, w.AccessCount, w.ByteSize, w.Tokens
}

// noNullElement refuses null in a list of strings, which encoding/json
// would keep as "": a group, tag or PII path that nobody gave.
func noNullElement(key string, val json.RawMessage) error {
	switch key {
	case "piiFields", "restrictedToGroups", "tags":
	default:
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(val, &list) != nil {
		return nil // not a list: the typed decode reports it
	}
	for i, e := range list {
		if string(bytes.TrimSpace(e)) == "null" {
			return Errorf(EINVALID, fmt.Sprintf("%s[%d]", key, i), "want a string, got null")
		}
	}
	return nil
}

func jsonTypeHint(key string) string {
	switch key {
	case "createdAt", "updatedAt", "lastAccessedAt", "validFrom", "validUntil":
		return "want an RFC 3339 timestamp string"
	case "importance", "trust", "sensitivity", "novelty":
		return "want a number in [0, 1]"
	case "containsPII", "textClean", "hasCredentials":
		return "want true or false"
	case "piiFields", "restrictedToGroups", "tags":
		return "want a list of strings"
	case "source":
		return "want a string"
	}
	return "want a number"
}

// Validate checks an item for ingest. field prefixes the offending field in
// errors ("items[3]" gives "items[3].metadata.trust"). It does not change the
// item; see Normalize for defaults.
func (it *Item) Validate(field string) error {
	at := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	id := strings.TrimSpace(it.ID)
	switch {
	case id == "":
		return Errorf(EINVALID, at("id"), "id is required")
	case id != it.ID:
		return Errorf(EINVALID, at("id"), "id must not start or end with white space")
	case len(it.ID) > MaxIDBytes:
		return Errorf(EINVALID, at("id"), "id is longer than %d bytes", MaxIDBytes)
	case !utf8.ValidString(it.ID):
		return Errorf(EINVALID, at("id"), "id is not valid UTF-8")
	}
	if strings.TrimSpace(it.Text) == "" {
		return Errorf(EINVALID, at("text"), "text is required: it is what search indexes")
	}
	if len(it.Text) > MaxTextBytes {
		return Errorf(EINVALID, at("text"), "text is %d bytes, the limit is %d", len(it.Text), MaxTextBytes)
	}
	if !utf8.ValidString(it.Text) {
		return Errorf(EINVALID, at("text"), "text is not valid UTF-8")
	}
	if d := depth(it.Content); d > MaxMetadataDepth {
		return Errorf(EINVALID, at("content"), "content nests %d levels deep, the limit is %d", d, MaxMetadataDepth)
	}
	m := it.Metadata
	for _, s := range []struct {
		name string
		v    *float64
	}{{"importance", m.Importance}, {"trust", m.Trust}, {"sensitivity", m.Sensitivity}, {"novelty", m.Novelty}} {
		if s.v != nil && (math.IsNaN(*s.v) || *s.v < 0 || *s.v > 1) {
			return Errorf(EINVALID, at("metadata."+s.name), "%s must be in [0, 1], got %v", s.name, *s.v)
		}
	}
	// A PII path the redactor cannot apply, or one that misses its key only
	// by case, would leave the personal data in every pack: refuse it here.
	for i, raw := range m.PIIFields {
		f := fmt.Sprintf("%s[%d]", at("metadata.piiFields"), i)
		p, err := ParseRedactionPath(raw)
		if err != nil {
			return Errorf(EINVALID, f, "%s", ErrorMessage(err))
		}
		if written, actual, found := p.caseMismatch(it.Content); found {
			return Errorf(EINVALID, f, "%q names nothing in content: keys are case-sensitive, and content has %q, not %q", raw, actual, written)
		}
	}
	if !m.ValidFrom.IsZero() && !m.ValidUntil.IsZero() && !m.ValidUntil.After(m.ValidFrom) {
		return Errorf(EINVALID, at("metadata.validUntil"), "validUntil %s must be after validFrom %s: the item holds from validFrom until validUntil",
			m.ValidUntil.Format(time.RFC3339Nano), m.ValidFrom.Format(time.RFC3339Nano))
	}
	if len(m.Tags) > MaxTags {
		return Errorf(EINVALID, at("metadata.tags"), "at most %d tags, got %d", MaxTags, len(m.Tags))
	}
	if len(m.RestrictedToGroups) > MaxGroups {
		return Errorf(EINVALID, at("metadata.restrictedToGroups"), "at most %d restrictedToGroups, got %d", MaxGroups, len(m.RestrictedToGroups))
	}
	if d := depth(m.Extra); d > MaxMetadataDepth {
		return Errorf(EINVALID, at("metadata"), "metadata nests %d levels deep, the limit is %d", d, MaxMetadataDepth)
	}
	if len(it.Links) > MaxLinks {
		return Errorf(EINVALID, at("links"), "at most %d links, got %d", MaxLinks, len(it.Links))
	}
	for i, l := range it.Links {
		if err := ValidateLink(l, fmt.Sprintf("%s[%d]", at("links"), i)); err != nil {
			return err
		}
		if l.Type != LinkSupersedes {
			continue
		}
		switch {
		case l.TargetType != TargetItem:
			return Errorf(EINVALID, fmt.Sprintf("%s[%d].targetType", at("links"), i), "a supersedes link names an item: its targetType must be empty, got %q", l.TargetType)
		case l.Target == it.ID:
			return Errorf(EINVALID, fmt.Sprintf("%s[%d].target", at("links"), i), "an item cannot supersede itself")
		}
	}
	return nil
}

// Normalize fills what ingest derives: createdAt defaults to now, tags and
// groups are de-duplicated, and a link without strength gets 1. It also
// clears the store-maintained fields so that a client cannot set them.
func (it *Item) Normalize(now time.Time) {
	m := &it.Metadata
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.CreatedAt = m.CreatedAt.UTC()
	if !m.ValidFrom.IsZero() {
		m.ValidFrom = m.ValidFrom.UTC()
	}
	if !m.ValidUntil.IsZero() {
		m.ValidUntil = m.ValidUntil.UTC()
	}
	m.Tags = dedupe(m.Tags)
	m.RestrictedToGroups = dedupe(m.RestrictedToGroups)
	m.UpdatedAt, m.Version, m.AccessCount, m.LastAccessedAt, m.ByteSize, m.Tokens = time.Time{}, 0, 0, time.Time{}, 0, 0
	for i := range it.Links {
		if it.Links[i].Strength == 0 {
			it.Links[i].Strength = 1
		}
	}
}

func dedupe(s []string) []string {
	if len(s) == 0 {
		return s
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// depth returns how deeply v nests maps and lists (a scalar is 0).
func depth(v any) int {
	switch x := v.(type) {
	case map[string]any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		d := 0
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// Delivered is the form of an item an agent receives, and the one that byte
// and token budgets measure.
type Delivered struct {
	ID      string         `json:"id"`
	Kind    string         `json:"kind,omitempty"`
	Text    string         `json:"text"`
	Content map[string]any `json:"content,omitempty"`
}

// Delivered returns the item as an agent receives it before redaction.
func (it *Item) Delivered() Delivered {
	return Delivered{ID: it.ID, Kind: it.Kind, Text: it.Text, Content: it.Content}
}

// Encode returns the JSON bytes that budgets measure.
func (d Delivered) Encode() ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding delivered item %q: %w", d.ID, err)
	}
	return b, nil
}
