package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Kind is the item kind of a memory.
const Kind = "memory"

// Metadata keys a memory's scope and type are filtered by.
const (
	KeySessionID = "session_id"
	KeyAgentID   = "agent_id"
	KeyRepo      = "repo"
	KeyCommitSHA = "commit_sha"
	KeyType      = "memory_type"
)

// Limits of the tools.
const (
	DefaultReadLimit = 20
	MaxReadLimit     = 100
	// MaxStatsItems bounds the memories memory.stats counts in one scope.
	MaxStatsItems = 10_000
	maxFieldBytes = 1024
	maxFiles      = 100
)

// Store is what the memory tools need of the item store.
type Store interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
	FullText() h4r.Generator
	RecordAccess(ids []string)
	// AddLink adds one link to an item atomically: concurrent links of one
	// memory must not lose one, as a read and an upsert would.
	AddLink(ctx context.Context, id string, l h4r.Link) (bool, error)
}

// Slicer is the policy slicer (scs.Slicer). Whatever the tools answer is
// built from the memories as it cleared them (scs.Cleared).
type Slicer interface {
	Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome
	Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []scs.Cleared
}

// Service runs the memory tools. Create it with New.
type Service struct {
	store  Store
	slicer Slicer
	limits scs.Limits
	now    func() time.Time
}

// Option configures a Service.
type Option func(*Service)

// WithBudget sets the byte and token budget of one read (the configured
// pack budget, SCS_MAX_*_DEFAULT); the item budget is the read's limit.
func WithBudget(l scs.Limits) Option { return func(s *Service) { s.limits = l } }

// WithClock sets the clock that dates memories.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// New returns the memory tools over a store and the policy slicer.
func New(store Store, slicer Slicer, opts ...Option) *Service {
	s := &Service{store: store, slicer: slicer, now: time.Now,
		limits: scs.Limits{MaxBytes: 122_880, MaxTokens: 30_000}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Scope says whose memory it is and where it applies.
type Scope struct {
	SessionID string   `json:"session_id,omitempty" jsonschema:"the agent session the memory belongs to"`
	AgentID   string   `json:"agent_id,omitempty" jsonschema:"the agent that wrote or reads the memory"`
	Repo      string   `json:"repo,omitempty" jsonschema:"the repository it is about"`
	Files     []string `json:"files,omitempty" jsonschema:"files it is about (linked as file:PATH)"`
	CommitSHA string   `json:"commit_sha,omitempty" jsonschema:"the commit it is about (linked as commit:SHA)"`
}

// WriteRequest is memory.write's input.
type WriteRequest struct {
	Scope   Scope          `json:"scope" jsonschema:"session_id and agent_id are required"`
	Type    string         `json:"type" jsonschema:"what kind of memory: decision, fix, convention, …"`
	Payload map[string]any `json:"payload" jsonschema:"the memory itself, an object"`
	Tags    []string       `json:"tags,omitempty" jsonschema:"tags to filter reads by"`
	// Sensitivity and RestrictedToGroups are H4R's own: the policy fields
	// of the memory item, so that a memory can be kept from keys without
	// the clearance or the group.
	Sensitivity        *float64 `json:"sensitivity,omitempty" jsonschema:"0 to 1; policy keeps sensitive memories from low clearances"`
	RestrictedToGroups []string `json:"restricted_to_groups,omitempty" jsonschema:"only keys in one of these groups may read it"`
	// Supersedes, Subject and the validity bounds say how the memory
	// stands to earlier ones: which it replaces, what it is about, and
	// when it holds.
	Supersedes []string   `json:"supersedes,omitempty" jsonschema:"ids of earlier memories this one replaces (a knowledge update); they rank lower from now on"`
	Subject    string     `json:"subject,omitempty" jsonschema:"what the memory is about (home_city, dog_name): a later memory of the same type, agent, repo and subject is proposed to supersede it"`
	ValidFrom  *time.Time `json:"valid_from,omitempty" jsonschema:"RFC 3339: when the memory starts to hold"`
	ValidUntil *time.Time `json:"valid_until,omitempty" jsonschema:"RFC 3339: when it stops holding (after valid_from)"`
}

// WriteResult is memory.write's output.
type WriteResult struct {
	MemoryID string `json:"memory_id"`
	// ProposedSupersedes are earlier memories the caller may see, of the
	// same type, agent, repo and subject, that the new one does not name
	// in supersedes: candidates for a supersedes the writer may confirm.
	ProposedSupersedes []string `json:"proposed_supersedes,omitempty"`
}

// Filter narrows memory.read.
type Filter struct {
	Type string   `json:"type,omitempty" jsonschema:"only memories of this type"`
	Tags []string `json:"tags,omitempty" jsonschema:"only memories with all these tags"`
	Text string   `json:"text,omitempty" jsonschema:"full-text query: results by relevance instead of newest first"`
}

// ReadRequest is memory.read's input.
type ReadRequest struct {
	Scope  Scope  `json:"scope" jsonschema:"the given fields must match (files excepted); an empty scope reads every memory the key may see"`
	Filter Filter `json:"filter,omitzero"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many memories (default 20, at most 100)"`
}

// Memory is one memory as read.
type Memory struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Payload   any            `json:"payload"`
	CreatedAt time.Time      `json:"created_at"`
	Tags      []string       `json:"tags,omitempty"`
	Scope     map[string]any `json:"scope,omitempty"`
	Score     float64        `json:"score,omitempty"` // the full-text score, with filter.text
	Redacted  bool           `json:"redacted,omitempty"`
}

// ReadResult is memory.read's output.
type ReadResult struct {
	Items []Memory `json:"items"`
	// Warnings say what the policy or the budget did, in counts.
	Warnings []string `json:"warnings,omitempty"`
}

// Related is what a memory is linked to: exactly one of its fields.
type Related struct {
	FilePath      string `json:"file_path,omitempty"`
	CommitSHA     string `json:"commit_sha,omitempty"`
	ContextPackID string `json:"context_pack_id,omitempty"`
}

// LinkRequest is memory.link's input.
type LinkRequest struct {
	MemoryID string  `json:"memory_id"`
	Related  Related `json:"related" jsonschema:"exactly one of file_path, commit_sha, context_pack_id"`
	Relation string  `json:"relation" jsonschema:"the link type: corrects, references, introduced_in, …"`
}

// LinkResult is memory.link's output.
type LinkResult struct {
	OK     bool   `json:"ok"`
	Target string `json:"target"` // the link's target id: file:PATH, commit:SHA, context_pack:ID
}

// StatsRequest is memory.stats's input.
type StatsRequest struct {
	Scope Scope `json:"scope"`
}

// StatsResult is memory.stats's output: the memories the caller may see
// in the scope, by type.
type StatsResult struct {
	Counts      map[string]int `json:"counts"`
	Total       int            `json:"total"`
	LastWriteAt *time.Time     `json:"last_write_at"`
}

// MaxSupersedes bounds the memories one write supersedes.
const MaxSupersedes = 16

// Write stores a memory and returns its generated id. Every memory it
// supersedes must be one spec may see (else not_found, as for one that
// does not exist); earlier memories of the same subject it does not name
// come back as proposals.
func (s *Service) Write(ctx context.Context, spec h4r.Specialist, req WriteRequest) (WriteResult, error) {
	if err := checkText("scope.session_id", req.Scope.SessionID, true); err != nil {
		return WriteResult{}, err
	}
	if err := checkText("scope.agent_id", req.Scope.AgentID, true); err != nil {
		return WriteResult{}, err
	}
	if err := checkScope(req.Scope); err != nil {
		return WriteResult{}, err
	}
	if err := checkText("type", req.Type, true); err != nil {
		return WriteResult{}, err
	}
	if req.Payload == nil {
		return WriteResult{}, h4r.Errorf(h4r.EINVALID, "payload", "payload is required: an object holding the memory")
	}
	if v := req.Sensitivity; v != nil && (*v < 0 || *v > 1 || *v != *v) {
		return WriteResult{}, h4r.Errorf(h4r.EINVALID, "sensitivity", "sensitivity must be in [0, 1], got %v", *v)
	}
	if err := checkText("subject", req.Subject, false); err != nil {
		return WriteResult{}, err
	}
	if len(req.Supersedes) > MaxSupersedes {
		return WriteResult{}, h4r.Errorf(h4r.EINVALID, "supersedes", "at most %d memories, got %d", MaxSupersedes, len(req.Supersedes))
	}
	for i, old := range req.Supersedes {
		field := fmt.Sprintf("supersedes[%d]", i)
		if err := checkText(field, old, true); err != nil {
			return WriteResult{}, err
		}
		if _, err := s.visible(ctx, spec, old); err != nil {
			if e, ok := errors.AsType[*h4r.Error](err); ok && e.Field == "memory_id" {
				return WriteResult{}, h4r.Errorf(e.Code, field, "%s", e.Message)
			}
			return WriteResult{}, err
		}
	}
	id := newID()
	now := s.now().UTC()
	meta := h4r.Metadata{
		CreatedAt:          now,
		Tags:               req.Tags,
		Source:             "memory.write",
		Sensitivity:        req.Sensitivity,
		RestrictedToGroups: req.RestrictedToGroups,
		Extra:              scopeMetadata(req.Scope),
	}
	meta.Extra[KeyType] = req.Type
	if req.Subject != "" {
		meta.Extra[h4r.SubjectKey] = req.Subject
	}
	if req.ValidFrom != nil {
		meta.ValidFrom = *req.ValidFrom
	}
	if req.ValidUntil != nil {
		meta.ValidUntil = *req.ValidUntil
	}
	it := h4r.Item{
		ID: id, Kind: Kind,
		Text:     text(req.Type, req.Payload),
		Content:  map[string]any{"type": req.Type, "payload": req.Payload, "scope": scopeContent(req.Scope)},
		Metadata: meta,
	}
	// Supersedes links come first, so that links[i] is supersedes[i] in
	// errors.
	for _, old := range req.Supersedes {
		it.Links = append(it.Links, h4r.Link{Type: h4r.LinkSupersedes, Target: old})
	}
	for _, f := range req.Scope.Files {
		it.Links = append(it.Links, h4r.Link{Type: "about_file", Target: "file:" + f})
	}
	if req.Scope.CommitSHA != "" {
		it.Links = append(it.Links, h4r.Link{Type: "about_commit", Target: "commit:" + req.Scope.CommitSHA})
	}
	if err := it.Validate(""); err != nil {
		return WriteResult{}, renameField(supersedesField(err, len(req.Supersedes)))
	}
	if _, err := s.store.Upsert(ctx, []h4r.Item{it}); err != nil {
		return WriteResult{}, fmt.Errorf("writing memory: %w", renameField(supersedesField(unbatched(err), len(req.Supersedes))))
	}
	res := WriteResult{MemoryID: id}
	if req.Subject != "" {
		proposed, err := s.sameSubject(ctx, spec, req, id)
		if err != nil {
			return res, err
		}
		res.ProposedSupersedes = proposed
	}
	return res, nil
}

// sameSubject returns the earlier memories spec may see of req's type,
// agent, repo and subject, other than id and those req supersedes,
// newest first.
func (s *Service) sameSubject(ctx context.Context, spec h4r.Specialist, req WriteRequest, id string) ([]string, error) {
	filters, err := s.filters(Scope{AgentID: req.Scope.AgentID, Repo: req.Scope.Repo}, Filter{Type: req.Type})
	if err != nil {
		return nil, err
	}
	if filters.Metadata == nil {
		filters.Metadata = map[string]any{}
	}
	filters.Metadata[h4r.SubjectKey] = req.Subject
	items, err := s.store.Find(ctx, h4r.ItemQuery{Filters: filters, Limit: MaxSupersedes + len(req.Supersedes) + 1})
	if err != nil {
		return nil, fmt.Errorf("listing memories of subject %q: %w", req.Subject, err)
	}
	var out []string
	for _, c := range s.slicer.Clear(ctx, spec, items) {
		if old := c.ID(); old != id && !slices.Contains(req.Supersedes, old) && len(out) < MaxSupersedes {
			out = append(out, old)
		}
	}
	return out, nil
}

// Read returns the memories of a scope the caller may see: newest first,
// or by relevance to filter.text.
func (s *Service) Read(ctx context.Context, spec h4r.Specialist, req ReadRequest) (ReadResult, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultReadLimit
	case limit < 0 || limit > MaxReadLimit:
		return ReadResult{}, h4r.Errorf(h4r.EINVALID, "limit", "limit must be between 1 and %d, got %d", MaxReadLimit, limit)
	}
	filters, err := s.filters(req.Scope, req.Filter)
	if err != nil {
		return ReadResult{}, err
	}
	// Policy may drop some: ask for more, so that the limit is still met.
	fetch := min(limit*4, MaxReadLimit*4)
	var items []*h4r.Item
	scores := map[string]float64{}
	if strings.TrimSpace(req.Filter.Text) != "" {
		if len(req.Filter.Text) > h4r.MaxQueryTextBytes {
			return ReadResult{}, h4r.Errorf(h4r.EINVALID, "filter.text", "text is %d bytes, the limit is %d", len(req.Filter.Text), h4r.MaxQueryTextBytes)
		}
		hits, err := s.store.FullText().Generate(ctx, h4r.CandidateQuery{Text: req.Filter.Text, Filters: filters, Limit: fetch})
		if err != nil {
			return ReadResult{}, fmt.Errorf("searching memories: %w", err)
		}
		for _, h := range hits {
			items = append(items, h.Item)
			scores[h.Item.ID] = h.Score
		}
	} else if items, err = s.store.Find(ctx, h4r.ItemQuery{Filters: filters, Limit: fetch}); err != nil {
		return ReadResult{}, fmt.Errorf("listing memories: %w", err)
	}
	limits := s.limits
	limits.MaxItems = limit
	out := s.slicer.Slice(ctx, spec, items, limits)
	res := ReadResult{Items: []Memory{}, Warnings: out.Warnings}
	var used []string
	for _, v := range out.Verdicts {
		c, kept := v.Cleared()
		if !kept {
			continue
		}
		res.Items = append(res.Items, memoryOf(c, scores[c.ID()]))
		used = append(used, c.ID())
	}
	if n := out.Stats.TotalDroppedPolicy; n > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d memories in this scope are not visible to this key", n))
	}
	if len(used) > 0 {
		s.store.RecordAccess(used) // a read is a use (frequency)
	}
	return res, nil
}

// Link links a memory the caller may see to a file, a commit or a
// context pack.
func (s *Service) Link(ctx context.Context, spec h4r.Specialist, req LinkRequest) (LinkResult, error) {
	if err := checkText("memory_id", req.MemoryID, true); err != nil {
		return LinkResult{}, err
	}
	if err := checkText("relation", req.Relation, true); err != nil {
		return LinkResult{}, err
	}
	var target, field string
	n := 0
	for _, r := range []struct{ field, prefix, value string }{
		{"related.file_path", "file:", req.Related.FilePath},
		{"related.commit_sha", "commit:", req.Related.CommitSHA},
		{"related.context_pack_id", "context_pack:", req.Related.ContextPackID},
	} {
		if r.value != "" {
			n++
			target, field = r.prefix+r.value, r.field
			if err := checkText(r.field, r.value, true); err != nil {
				return LinkResult{}, err
			}
		}
	}
	if n != 1 {
		return LinkResult{}, h4r.Errorf(h4r.EINVALID, "related", "give exactly one of file_path, commit_sha, context_pack_id (got %d)", n)
	}
	c, err := s.visible(ctx, spec, req.MemoryID)
	if err != nil {
		return LinkResult{}, err
	}
	// One atomic add in the store (a link held already is no error): a
	// read of the memory and an upsert of it would lose a concurrent link.
	if _, err := s.store.AddLink(ctx, c.ID(), h4r.Link{Type: req.Relation, Target: target}); err != nil {
		if e, ok := errors.AsType[*h4r.Error](err); ok && (e.Field == "links" || strings.HasPrefix(e.Field, "link.")) {
			return LinkResult{}, h4r.Errorf(h4r.EINVALID, field, "%s", e.Message)
		}
		return LinkResult{}, fmt.Errorf("linking memory %q: %w", req.MemoryID, err)
	}
	return LinkResult{OK: true, Target: target}, nil
}

// Stats counts the memories of a scope the caller may see, by type.
func (s *Service) Stats(ctx context.Context, spec h4r.Specialist, req StatsRequest) (StatsResult, error) {
	filters, err := s.filters(req.Scope, Filter{})
	if err != nil {
		return StatsResult{}, err
	}
	items, err := s.store.Find(ctx, h4r.ItemQuery{Filters: filters, Limit: MaxStatsItems})
	if err != nil {
		return StatsResult{}, fmt.Errorf("listing memories: %w", err)
	}
	res := StatsResult{Counts: map[string]int{}}
	for _, c := range s.slicer.Clear(ctx, spec, items) {
		it := c.Item()
		typ, _ := it.Metadata.Extra[KeyType].(string)
		res.Counts[typ]++
		res.Total++
		if c := it.Metadata.CreatedAt; res.LastWriteAt == nil || c.After(*res.LastWriteAt) {
			res.LastWriteAt = &c
		}
	}
	return res, nil
}

// visible returns a memory as the caller may see it; one it may not see
// is not_found, as one that does not exist (its existence is not told).
func (s *Service) visible(ctx context.Context, spec h4r.Specialist, id string) (scs.Cleared, error) {
	notFound := h4r.Errorf(h4r.ENOTFOUND, "memory_id", "no memory with id %q", id)
	it, err := s.store.Get(ctx, id)
	if h4r.ErrorCode(err) == h4r.ENOTFOUND || (err == nil && it.Kind != Kind) {
		return scs.Cleared{}, notFound
	}
	if err != nil {
		return scs.Cleared{}, fmt.Errorf("reading memory %q: %w", id, err)
	}
	cleared := s.slicer.Clear(ctx, spec, []*h4r.Item{it})
	if len(cleared) == 0 {
		return scs.Cleared{}, notFound
	}
	return cleared[0], nil
}

// filters are the store filters of a scope and a filter: kind memory,
// the scope's fields, the type and the tags. They are parsed as a
// request's filters are, so that a value a store cannot hold is refused
// alike everywhere.
func (s *Service) filters(scope Scope, f Filter) (h4r.Filters, error) {
	if err := checkScope(scope); err != nil {
		return h4r.Filters{}, err
	}
	for _, x := range []struct{ field, value string }{
		{"scope.session_id", scope.SessionID}, {"scope.agent_id", scope.AgentID}, {"filter.type", f.Type},
	} {
		if err := checkText(x.field, x.value, false); err != nil {
			return h4r.Filters{}, err
		}
	}
	raw := map[string]any{"kind": Kind}
	maps.Copy(raw, scopeMetadata(scope))
	if f.Type != "" {
		raw[KeyType] = f.Type
	}
	if len(f.Tags) > 0 {
		tags := make([]any, len(f.Tags))
		for i, t := range f.Tags {
			tags[i] = t
		}
		raw["tags"] = tags
	}
	filters, err := h4r.ParseFilters("filter", raw)
	if err != nil {
		return h4r.Filters{}, renameFilterField(err)
	}
	return filters, nil
}

func checkScope(scope Scope) error {
	for _, x := range []struct{ field, value string }{
		{"scope.repo", scope.Repo}, {"scope.commit_sha", scope.CommitSHA},
	} {
		if err := checkText(x.field, x.value, false); err != nil {
			return err
		}
	}
	if len(scope.Files) > maxFiles {
		return h4r.Errorf(h4r.EINVALID, "scope.files", "at most %d files, got %d", maxFiles, len(scope.Files))
	}
	for i, f := range scope.Files {
		if err := checkText(fmt.Sprintf("scope.files[%d]", i), f, true); err != nil {
			return err
		}
	}
	return nil
}

// checkText checks one string field: present when required, at most
// maxFieldBytes, no NUL (no store can hold it), not only blanks.
func checkText(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return h4r.Errorf(h4r.EINVALID, field, "%s is required", field)
	case v == "":
		return nil
	case strings.TrimSpace(v) == "":
		return h4r.Errorf(h4r.EINVALID, field, "%s must not be blank", field)
	case len(v) > maxFieldBytes:
		return h4r.Errorf(h4r.EINVALID, field, "%s is %d bytes, the limit is %d", field, len(v), maxFieldBytes)
	case strings.IndexByte(v, 0) >= 0:
		return h4r.Errorf(h4r.EINVALID, field, "%s contains a NUL character", field)
	}
	return nil
}

// scopeMetadata is the scope as filterable metadata (files are links).
func scopeMetadata(scope Scope) map[string]any {
	m := map[string]any{}
	for k, v := range map[string]string{KeySessionID: scope.SessionID, KeyAgentID: scope.AgentID, KeyRepo: scope.Repo, KeyCommitSHA: scope.CommitSHA} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func scopeContent(scope Scope) map[string]any {
	m := scopeMetadata(scope)
	if len(scope.Files) > 0 {
		files := make([]any, len(scope.Files))
		for i, f := range scope.Files {
			files[i] = f
		}
		m["files"] = files
	}
	return m
}

// text is what full text indexes of a memory: its type, then the
// payload's values, strings as they are, anything else as JSON, in key
// order.
func text(typ string, payload map[string]any) string {
	parts := []string{typ + "."}
	for _, k := range slices.Sorted(maps.Keys(payload)) {
		switch v := payload[k].(type) {
		case string:
			parts = append(parts, k+": "+v)
		default:
			b, err := json.Marshal(v)
			if err == nil {
				parts = append(parts, k+": "+string(b))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// memoryOf is a cleared memory as memory.read returns it: what policy
// left of its content.
func memoryOf(cleared scs.Cleared, score float64) Memory {
	it := cleared.Item()
	m := Memory{ID: it.ID, CreatedAt: it.Metadata.CreatedAt, Tags: it.Metadata.Tags, Score: score, Redacted: cleared.Redacted()}
	if c := it.Content; c != nil {
		m.Type, _ = c["type"].(string)
		m.Payload = c["payload"]
		m.Scope, _ = c["scope"].(map[string]any)
	}
	if m.Type == "" {
		m.Type, _ = it.Metadata.Extra[KeyType].(string)
	}
	if m.Payload == nil {
		m.Payload = map[string]any{} // redacted whole, or written without
	}
	return m
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "memory-" + hex.EncodeToString(b[:])
}

// renameField maps the item's field names in an error to the tool's:
// metadata.tags → tags, content.payload → payload.
func renameField(err error) error {
	e, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		return err
	}
	for from, to := range map[string]string{"metadata.tags": "tags", "content.payload": "payload", "metadata.restrictedToGroups": "restricted_to_groups", "content": "payload", "text": "payload",
		"metadata.validFrom": "valid_from", "metadata.validUntil": "valid_until", "metadata." + h4r.SubjectKey: "subject"} {
		if rest, found := strings.CutPrefix(e.Field, from); found {
			return &h4r.Error{Code: e.Code, Message: e.Message, Field: to + rest}
		}
	}
	return err
}

// supersedesField names supersedes[i] for an error on links[i].target,
// i < n: a memory's first n links are its supersedes (Write).
func supersedesField(err error, n int) error {
	e, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		return err
	}
	var i int
	if _, scanErr := fmt.Sscanf(e.Field, "links[%d].target", &i); scanErr == nil && i < n && e.Field == fmt.Sprintf("links[%d].target", i) {
		return &h4r.Error{Code: e.Code, Message: e.Message, Field: fmt.Sprintf("supersedes[%d]", i)}
	}
	return err
}

// renameFilterField maps ParseFilters' field names to the tool's.
func renameFilterField(err error) error {
	e, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		return err
	}
	for from, to := range map[string]string{"filter.tags": "filter.tags", "filter." + KeyType: "filter.type",
		"filter." + KeySessionID: "scope.session_id", "filter." + KeyAgentID: "scope.agent_id",
		"filter." + KeyRepo: "scope.repo", "filter." + KeyCommitSHA: "scope.commit_sha"} {
		if rest, found := strings.CutPrefix(e.Field, from); found {
			return &h4r.Error{Code: e.Code, Message: e.Message, Field: to + rest}
		}
	}
	return err
}

// unbatched drops the "items[0]." a store puts before a field.
func unbatched(err error) error {
	e, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		return err
	}
	if rest, found := strings.CutPrefix(e.Field, "items[0]."); found {
		return &h4r.Error{Code: e.Code, Message: e.Message, Field: rest}
	}
	return err
}
