package decision

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Item kinds this package writes.
const (
	KindTrace = "decision_trace"
	KindEvent = "event"
)

// Decision types (decision_type in docs/decisions.md).
const (
	TypeDecompositionStrategy = "decomposition_strategy"
	TypeFileAssignment        = "file_assignment"
	TypeExceptionGranted      = "exception_granted"
	TypeReviewApproval        = "review_approval"
	TypeConflictResolution    = "conflict_resolution"
)

// Types lists the known decision types, in the order docs/decisions.md
// lists them. The set is open: any other type that is a lower-case name
// (ValidType) is recorded too, so a new kind of decision needs no change
// here.
func Types() []string {
	return []string{TypeDecompositionStrategy, TypeFileAssignment, TypeExceptionGranted, TypeReviewApproval, TypeConflictResolution}
}

// Alternative is an option considered and rejected.
type Alternative struct {
	Option          string `json:"option"`
	RejectedBecause string `json:"rejected_because"`
}

// CitedPrecedent is a precedent a decision cites: an epic, or another
// decision trace, with the reason.
type CitedPrecedent struct {
	EpicID     string `json:"epic_id,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Trace is a decision trace with the wire names of docs/decisions.md.
// Decision, InputsGathered and PolicyEvaluated are JSON values as the agent
// gave them. Links are entity links beyond those the fields imply
// (applies_pattern to a memory, similar_to an epic, …). Metadata is H4R's
// item metadata (restrictedToGroups, sensitivity, tags, …), which policy
// reads.
type Trace struct {
	ID              string          `json:"id,omitempty"`
	DecisionType    string          `json:"decision_type"`
	EpicID          string          `json:"epic_id,omitempty"`
	BeadID          string          `json:"bead_id,omitempty"`
	AgentName       string          `json:"agent_name"`
	ProjectKey      string          `json:"project_key"`
	Decision        json.RawMessage `json:"decision"`
	Rationale       string          `json:"rationale,omitempty"`
	InputsGathered  json.RawMessage `json:"inputs_gathered,omitempty"`
	PolicyEvaluated json.RawMessage `json:"policy_evaluated,omitempty"`
	Alternatives    json.RawMessage `json:"alternatives,omitempty"`
	PrecedentCited  json.RawMessage `json:"precedent_cited,omitempty"`
	OutcomeEventID  EventRef        `json:"outcome_event_id,omitempty"`
	Timestamp       Time            `json:"timestamp"`
	Links           []TraceLink     `json:"links,omitempty"`
	Metadata        *h4r.Metadata   `json:"metadata,omitempty"`
}

// EventRef is the id of an outcome event: a string, or an integer (the
// format's integer column), which reads as its decimal digits.
type EventRef string

// UnmarshalJSON reads a string or an integer.
func (r *EventRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return h4r.Errorf(h4r.EINVALID, "", "want an event id: a string or an integer")
		}
		*r = EventRef(s)
		return nil
	}
	if string(b) == "null" {
		*r = ""
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return h4r.Errorf(h4r.EINVALID, "", "want an event id: a string or a non-negative integer, got %s", b)
	}
	*r = EventRef(strconv.FormatInt(n, 10))
	return nil
}

// TraceLink is one of a trace's own links. It reads the item's names
// {type, target, targetType, strength, context} or the decision traces'
// {linkType, entityId, entityType, strength, context} (one or the other,
// not a mix), and is stored as an item link.
type TraceLink h4r.Link

// UnmarshalJSON reads either vocabulary, refusing unknown keys and mixes.
func (l *TraceLink) UnmarshalJSON(b []byte) error {
	var w struct {
		Type       *string  `json:"type"`
		Target     *string  `json:"target"`
		TargetType *string  `json:"targetType"`
		LinkType   *string  `json:"linkType"`
		EntityID   *string  `json:"entityId"`
		EntityType *string  `json:"entityType"`
		Strength   *float64 `json:"strength"`
		Context    *string  `json:"context"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return h4r.Errorf(h4r.EINVALID, "", "want a link {type, target, targetType, strength, context} or {linkType, entityId, entityType, strength, context}: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	item := w.Type != nil || w.Target != nil || w.TargetType != nil
	entity := w.LinkType != nil || w.EntityID != nil || w.EntityType != nil
	if item && entity {
		return h4r.Errorf(h4r.EINVALID, "", "a link is {type, target, targetType} or {linkType, entityId, entityType}, not a mix of both")
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	*l = TraceLink{Type: str(w.Type), Target: str(w.Target), TargetType: str(w.TargetType), Context: str(w.Context)}
	if entity {
		l.Type, l.Target, l.TargetType = str(w.LinkType), str(w.EntityID), str(w.EntityType)
	}
	if w.Strength != nil {
		l.Strength = *w.Strength
	}
	return nil
}

// Time is a timestamp that reads milliseconds since the epoch (the
// format's integer column) or an RFC 3339 string, and writes milliseconds.
type Time struct{ time.Time }

// UnmarshalJSON reads an integer of milliseconds or an RFC 3339 string.
func (t *Time) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return h4r.Errorf(h4r.EINVALID, "", "want milliseconds since 1970 or an RFC 3339 string")
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return h4r.Errorf(h4r.EINVALID, "", "want milliseconds since 1970 or an RFC 3339 string, got %q", s)
		}
		t.Time = v.UTC()
		return nil
	}
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return h4r.Errorf(h4r.EINVALID, "", "want milliseconds since 1970 or an RFC 3339 string")
	}
	t.Time = time.UnixMilli(ms).UTC()
	return nil
}

// MarshalJSON writes milliseconds since the epoch; zero is 0.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("0"), nil
	}
	return strconv.AppendInt(nil, t.UnixMilli(), 10), nil
}

// Limits on a trace.
const (
	MaxAlternatives = 64
	MaxPrecedents   = 64
	maxNameBytes    = 256
)

// NewID returns a generated id with the prefix ("dt", "ev"): the prefix,
// a dash and 21 characters of nanoid's alphabet from crypto/rand.
func NewID(prefix string) string {
	const alphabet = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict"
	b := make([]byte, 21)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = alphabet[b[i]&63]
	}
	return prefix + "-" + string(b)
}

// Prepared is a trace checked and with its parsed lists.
type Prepared struct {
	Trace        Trace
	Alternatives []Alternative
	Precedents   []CitedPrecedent
}

// Prepare validates t, fills its id (dt-…) and timestamp (now) when
// absent, and parses its lists. field prefixes every offending field
// ("decision_traces[2]"). It names the field of the first problem: an
// unknown decision_type, alternatives that are not a list, …
func Prepare(t Trace, field string, now time.Time) (*Prepared, error) {
	at := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	if t.ID == "" {
		t.ID = NewID("dt")
	}
	if t.Timestamp.IsZero() {
		t.Timestamp = Time{now.UTC()}
	}
	switch {
	case len(t.ID) > h4r.MaxIDBytes || strings.TrimSpace(t.ID) != t.ID:
		return nil, h4r.Errorf(h4r.EINVALID, at("id"), "id must be at most %d bytes without surrounding white space", h4r.MaxIDBytes)
	case t.DecisionType == "":
		return nil, h4r.Errorf(h4r.EINVALID, at("decision_type"), "decision_type is required (one of %s)", strings.Join(Types(), ", "))
	case !ValidType(t.DecisionType):
		return nil, h4r.Errorf(h4r.EINVALID, at("decision_type"), "decision_type %q is not a type name: 1 to %d lower-case letters, digits and underscores, starting with a letter (known: %s)", t.DecisionType, maxTypeBytes, strings.Join(Types(), ", "))
	case strings.TrimSpace(t.AgentName) == "":
		return nil, h4r.Errorf(h4r.EINVALID, at("agent_name"), "agent_name is required")
	case strings.TrimSpace(t.ProjectKey) == "":
		return nil, h4r.Errorf(h4r.EINVALID, at("project_key"), "project_key is required")
	case isNull(t.Decision):
		return nil, h4r.Errorf(h4r.EINVALID, at("decision"), "decision is required: the decision made, as a JSON value")
	}
	for name, v := range map[string]string{"epic_id": t.EpicID, "bead_id": t.BeadID, "agent_name": t.AgentName, "project_key": t.ProjectKey} {
		if len(v) > maxNameBytes {
			return nil, h4r.Errorf(h4r.EINVALID, at(name), "%s is longer than %d bytes", name, maxNameBytes)
		}
	}
	// Writers of the decision-trace format send the JSON columns as JSON
	// text (JSON.stringify): a string holding a list or an object is read
	// as that value, so the stored trace has one, structured form.
	for name, raw := range map[string]*json.RawMessage{"decision": &t.Decision, "inputs_gathered": &t.InputsGathered,
		"policy_evaluated": &t.PolicyEvaluated, "alternatives": &t.Alternatives, "precedent_cited": &t.PrecedentCited} {
		v, err := unwrapJSONText(*raw)
		if err != nil {
			return nil, h4r.Errorf(h4r.EINVALID, at(name), "%s is a string holding invalid JSON: %v", name, err)
		}
		*raw = v
	}
	p := &Prepared{Trace: t}
	if !isNull(t.Alternatives) {
		if err := decodeList(t.Alternatives, &p.Alternatives, at("alternatives"), "a list of {option, rejected_because}"); err != nil {
			return nil, err
		}
		if len(p.Alternatives) > MaxAlternatives {
			return nil, h4r.Errorf(h4r.EINVALID, at("alternatives"), "at most %d alternatives, got %d", MaxAlternatives, len(p.Alternatives))
		}
		for i, a := range p.Alternatives {
			if strings.TrimSpace(a.Option) == "" {
				return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s[%d].option", at("alternatives"), i), "option is required")
			}
		}
	}
	if !isNull(t.PrecedentCited) {
		if err := decodeList(t.PrecedentCited, &p.Precedents, at("precedent_cited"), "a list of {epic_id or decision_id, reason}"); err != nil {
			return nil, err
		}
		if len(p.Precedents) > MaxPrecedents {
			return nil, h4r.Errorf(h4r.EINVALID, at("precedent_cited"), "at most %d precedents, got %d", MaxPrecedents, len(p.Precedents))
		}
		for i, pc := range p.Precedents {
			if (pc.EpicID == "") == (pc.DecisionID == "") {
				return nil, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s[%d]", at("precedent_cited"), i), "a precedent names exactly one of epic_id and decision_id")
			}
		}
	}
	for i, l := range t.Links {
		if err := h4r.ValidateLink(h4r.Link(l), fmt.Sprintf("%s[%d]", at("links"), i)); err != nil {
			return nil, err
		}
	}
	it, err := p.Item()
	if err != nil {
		return nil, err
	}
	if err := it.Validate(field); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeList decodes a JSON list strictly enough to name what is wrong:
// not a list, or an element of the wrong shape.
func decodeList[T any](raw json.RawMessage, out *[]T, field, want string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return h4r.Errorf(h4r.EINVALID, field, "%s must be a list (%s)", field[strings.LastIndexByte(field, '.')+1:], want)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return h4r.Errorf(h4r.EINVALID, field, "invalid list: %v", err)
	}
	*out = make([]T, len(elems))
	for i, e := range elems {
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&(*out)[i]); err != nil {
			return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s[%d]", field, i), "want %s: %s", want, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	return nil
}

// maxTypeBytes bounds a decision type's name.
const maxTypeBytes = 64

// ValidType reports whether t can name a decision type: a known one, or
// a lower-case snake_case name of at most 64 bytes.
func ValidType(t string) bool {
	if slices.Contains(Types(), t) {
		return true
	}
	if t == "" || len(t) > maxTypeBytes || t[0] < 'a' || t[0] > 'z' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// unwrapJSONText returns the value a JSON string holds when the string's
// text is a JSON list or object; any other value as it is.
func unwrapJSONText(raw json.RawMessage) (json.RawMessage, error) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || s[0] != '"' {
		return raw, nil
	}
	var text string
	if err := json.Unmarshal(s, &text); err != nil {
		return raw, nil
	}
	inner := strings.TrimSpace(text)
	if inner == "" || (inner[0] != '[' && inner[0] != '{') {
		return raw, nil
	}
	if !json.Valid([]byte(inner)) {
		return nil, fmt.Errorf("%.60q", inner)
	}
	return json.RawMessage(inner), nil
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// Item maps the trace to its item: kind decision_trace, the trace as
// content, the filterable fields (decision_type, epic_id, bead_id,
// agent_name, project_key) as metadata, and links for each cited
// precedent (cites_precedent), each file a file assignment names
// (assigns_file), and the trace's own links.
func (p *Prepared) Item() (h4r.Item, error) {
	t := p.Trace
	content, err := toMap(t)
	if err != nil {
		return h4r.Item{}, err
	}
	delete(content, "metadata")
	delete(content, "links")
	var md h4r.Metadata
	if t.Metadata != nil {
		md = *t.Metadata
	}
	md.CreatedAt = t.Timestamp.Time
	if md.Extra == nil {
		md.Extra = map[string]any{}
	}
	for k, v := range map[string]string{"decision_type": t.DecisionType, "epic_id": t.EpicID, "bead_id": t.BeadID,
		"agent_name": t.AgentName, "project_key": t.ProjectKey, "decision_status": decisionStatus(t.Decision)} {
		if v != "" {
			md.Extra[k] = v
		}
	}
	var links []h4r.Link
	for _, pc := range p.Precedents {
		if pc.EpicID != "" {
			links = append(links, h4r.Link{Type: h4r.LinkCitesPrecedent, Target: pc.EpicID, TargetType: h4r.TargetEpic, Strength: 1, Context: pc.Reason})
		} else {
			links = append(links, h4r.Link{Type: h4r.LinkCitesPrecedent, Target: pc.DecisionID, TargetType: h4r.TargetDecision, Strength: 1, Context: pc.Reason})
		}
	}
	if t.DecisionType == TypeFileAssignment {
		for _, f := range assignedFiles(t.Decision) {
			links = append(links, h4r.Link{Type: h4r.LinkAssignsFile, Target: f, TargetType: h4r.TargetFile, Strength: 1})
		}
	}
	for _, l := range t.Links {
		links = append(links, h4r.Link(l))
	}
	return h4r.Item{ID: t.ID, Kind: KindTrace, Text: p.text(), Content: content, Metadata: md, Links: links}, nil
}

// assignedFiles returns decision.files of a file assignment.
func assignedFiles(decision json.RawMessage) []string {
	var d struct {
		Files []string `json:"files"`
	}
	if json.Unmarshal(decision, &d) != nil {
		return nil
	}
	var out []string
	for _, f := range d.Files {
		if strings.TrimSpace(f) != "" && len(f) <= h4r.MaxIDBytes {
			out = append(out, f)
		}
	}
	return out
}

// text is what search indexes: the type, the context, the rationale, the
// decision and the rejected alternatives.
func (p *Prepared) text() string {
	t := p.Trace
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s decision by %s", strings.ReplaceAll(t.DecisionType, "_", " "), t.AgentName)
	if t.EpicID != "" {
		fmt.Fprintf(&sb, " in epic %s", t.EpicID)
	}
	sb.WriteString(". ")
	if t.Rationale != "" {
		sb.WriteString(t.Rationale)
		sb.WriteString(". ")
	}
	sb.WriteString("Decision: ")
	sb.WriteString(string(bytes.TrimSpace(t.Decision)))
	for _, a := range p.Alternatives {
		fmt.Fprintf(&sb, ". Rejected %s because %s", a.Option, a.RejectedBecause)
	}
	s := sb.String()
	if len(s) > h4r.MaxTextBytes {
		s = s[:h4r.MaxTextBytes]
		for !utf8Valid(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding a decision trace: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding a decision trace: %w", err)
	}
	return m, nil
}

// Wire is a stored (and delivered, possibly redacted) decision trace or
// event as an answer carries it: the content with the item's id, and its
// links.
type Wire map[string]any

// TraceID is the id an answer names a trace by: a commit trace's own UUID
// (content.id), which search, GET /v1/trace and its decisions' trace_id
// use too; any other item's id. A commit trace whose id policy removed is
// named by its item id ({repo}@{sha}).
func TraceID(kind string, content map[string]any, itemID string) string {
	if kind == KindCommitTrace {
		if id, ok := content["id"].(string); ok && id != "" {
			return id
		}
	}
	return itemID
}

// FromCleared is the wire form of an item as the slicer cleared it: its
// redacted content, with id; links are given apart (links are not
// redacted content, but the caller drops those to hidden items).
func FromCleared(c scs.Cleared, links []h4r.Link) Wire {
	d := c.Delivery()
	w := Wire{}
	for k, v := range d.Content {
		w[k] = v
	}
	w["id"] = TraceID(d.Kind, d.Content, d.ID)
	if len(links) > 0 {
		w["links"] = links
	}
	return w
}
