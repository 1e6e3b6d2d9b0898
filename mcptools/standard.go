package mcptools

import (
	"context"
	"fmt"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/memory"
)

// Packer builds context packs (engine.Engine).
type Packer interface {
	Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)
}

// Memory is the retrieval contract's memory tools (memory.Service).
type Memory interface {
	Write(ctx context.Context, spec h4r.Specialist, req memory.WriteRequest) (memory.WriteResult, error)
	Read(ctx context.Context, spec h4r.Specialist, req memory.ReadRequest) (memory.ReadResult, error)
	Link(ctx context.Context, spec h4r.Specialist, req memory.LinkRequest) (memory.LinkResult, error)
	Stats(ctx context.Context, spec h4r.Specialist, req memory.StatsRequest) (memory.StatsResult, error)
}

// Deps are what the standard tools and resources use.
type Deps struct {
	Packer Packer
	Memory Memory
	// Policy returns the active policy's status (app.Policy.Status), for
	// h4r://policy; nil leaves the resource out.
	Policy func() any
	// Items counts the store's items, for h4r://stats.
	Items func(ctx context.Context) (int, error)
	// Timeout bounds one context_pack call (H4R_REQUEST_TIMEOUT).
	Timeout time.Duration
}

// ContextPackArgs are context_pack's arguments: the item contract's request
// payload (no specialist: the caller is the key's principal) and compact.
type ContextPackArgs struct {
	Query         h4r.Query          `json:"query" jsonschema:"what to find: text, and optionally type (hybrid, the default: full-text and vectors; keyword: full-text only; semantic; causal), filters, and expand (true or false: pseudo-relevance feedback, the query expanded with the words of its top full-text hits; left out: the server default)"`
	Limit         int                `json:"limit,omitempty" jsonschema:"at most this many results (default 10)"`
	Weights       map[string]float64 `json:"weights,omitempty" jsonschema:"per-request signal weights"`
	Anchors       []string           `json:"anchors,omitempty" jsonschema:"item ids that causal hops start from"`
	MaxHops       int                `json:"max_hops,omitempty" jsonschema:"hops from the anchors"`
	Superseded    string             `json:"superseded,omitempty" jsonschema:"what becomes of an item a newer one supersedes: demote (default, unless the query asks about an earlier time), keep or exclude"`
	ValidAt       string             `json:"valid_at,omitempty" jsonschema:"RFC 3339: leave out items whose validFrom/validUntil interval does not hold this time"`
	Budget        *h4r.Budget        `json:"budget,omitempty" jsonschema:"maxBytes, maxTokens, maxItems"`
	MinScore      float64            `json:"min_score,omitempty" jsonschema:"drop results under this score"`
	TLDRSentences *int               `json:"tldr_sentences,omitempty" jsonschema:"sentences of the TL;DR"`
	AsOf          string             `json:"as_of,omitempty" jsonschema:"when the question is asked (RFC 3339): relative times in the query count from it"`
	Explain       string             `json:"explain,omitempty" jsonschema:"with compact false: kept (default) explains the delivered items; all also explains every other candidate and why it was left out"`
	Compact       *bool              `json:"compact,omitempty" jsonschema:"true (default): the TL;DR, results as id, kind, text, score, source, and warnings; false: the whole pack with its explainability"`
}

// CompactPack is a pack cut to what an agent puts into its prompt.
type CompactPack struct {
	RequestID string          `json:"request_id,omitempty"`
	Status    string          `json:"status"`
	TLDR      string          `json:"tldr"`
	Results   []CompactResult `json:"results"`
	Sources   []string        `json:"sources"`
	Warnings  []string        `json:"warnings"`
}

// CompactResult is one result of a compact pack.
type CompactResult struct {
	ID       string  `json:"id"`
	Kind     string  `json:"kind,omitempty"`
	Text     string  `json:"text"`
	Score    float64 `json:"score"`
	Source   string  `json:"source"`
	Redacted bool    `json:"redacted,omitempty"`
	// SupersededBy: as in the full pack's result.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Standard adds H4R's own tools and resources: context_pack, the memory
// tools and the policy and stats resources.
func Standard(r *Registry, d Deps) {
	AddTool(r, "context_pack", "A context pack: items ranked by eight signals, sliced by policy for this key, within budgets, with a TL;DR. Compact by default.", auth.RouteRead,
		func(ctx context.Context, c Caller, in ContextPackArgs) (any, error) {
			req := h4r.ContextRequest{Query: in.Query, Limit: in.Limit, Weights: in.Weights, Anchors: in.Anchors, MaxHops: in.MaxHops,
				Budget: in.Budget, MinScore: in.MinScore, TLDRSentences: in.TLDRSentences, AsOf: in.AsOf, Explain: in.Explain}
			req.Superseded, req.ValidAt = in.Superseded, in.ValidAt
			plan, err := req.Plan("")
			if err != nil {
				return nil, err
			}
			plan.Audit = c.MayAudit()
			if d.Timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d.Timeout)
				defer cancel()
			}
			p, err := d.Packer.Run(ctx, c.Specialist, plan)
			if err != nil {
				return nil, fmt.Errorf("building a context pack: %w", err)
			}
			if in.Compact != nil && !*in.Compact {
				return p, nil
			}
			return compact(p), nil
		})
	AddTool(r, "memory_write", "memory.write: store a memory {scope{session_id, agent_id, repo?, files?, commit_sha?}, type, payload, tags?, supersedes?, subject?, valid_from?, valid_until?}; returns {memory_id, proposed_supersedes?}.", auth.RouteIngest,
		func(ctx context.Context, c Caller, in memory.WriteRequest) (memory.WriteResult, error) {
			return d.Memory.Write(ctx, c.Specialist, in)
		})
	AddTool(r, "memory_read", "memory.read: the memories of a scope this key may see, newest first, or by relevance to filter.text.", auth.RouteRead,
		func(ctx context.Context, c Caller, in memory.ReadRequest) (memory.ReadResult, error) {
			return d.Memory.Read(ctx, c.Specialist, in)
		})
	AddTool(r, "memory_link", "memory.link: link a memory to a file, a commit or a context pack {memory_id, related{file_path | commit_sha | context_pack_id}, relation}.", auth.RouteIngest,
		func(ctx context.Context, c Caller, in memory.LinkRequest) (memory.LinkResult, error) {
			return d.Memory.Link(ctx, c.Specialist, in)
		})
	AddTool(r, "memory_stats", "memory.stats: the memories of a scope this key may see, counted by type, and the last write.", auth.RouteRead,
		func(ctx context.Context, c Caller, in memory.StatsRequest) (memory.StatsResult, error) {
			return d.Memory.Stats(ctx, c.Specialist, in)
		})
	if d.Policy != nil {
		r.AddResource("h4r://policy", "policy", "The active policy: revision, when and from where it was loaded, the last refused reload, cache counters (admin keys, as GET /v1/policy).", auth.RouteAdmin,
			func(context.Context, Caller) (any, error) { return d.Policy(), nil })
	}
	r.AddResource("h4r://stats", "stats", "Items in the store, and the memories this key may see, by type.", auth.RouteRead,
		func(ctx context.Context, c Caller) (any, error) {
			out := map[string]any{}
			if d.Items != nil {
				n, err := d.Items(ctx)
				if err != nil {
					return nil, err
				}
				out["items"] = n
			}
			m, err := d.Memory.Stats(ctx, c.Specialist, memory.StatsRequest{})
			if err != nil {
				return nil, err
			}
			out["memories"] = m
			return out, nil
		})
}

func compact(p *h4r.Pack) CompactPack {
	out := CompactPack{RequestID: p.RequestID, Status: p.Status, TLDR: p.Explainability.TLDR.Text,
		Results: []CompactResult{}, Sources: p.SourceNames, Warnings: p.Explainability.Warnings}
	for _, r := range p.Results {
		out.Results = append(out.Results, CompactResult{ID: r.ID, Kind: r.Kind, Text: r.Text, Score: r.Score, Source: r.Metadata.Source, Redacted: r.Metadata.Redacted,
			SupersededBy: r.SupersededBy})
	}
	return out
}
