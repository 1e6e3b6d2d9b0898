package mcptools

import (
	"context"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/trace"
)

// TraceSearcher searches commit traces (trace.Service).
type TraceSearcher interface {
	Search(ctx context.Context, spec h4r.Specialist, req trace.SearchRequest) (*trace.SearchResponse, error)
}

// Precedents answers the decision-trace presets (decision.Service).
type Precedents interface {
	Preset(ctx context.Context, spec h4r.Specialist, q decision.PresetQuery) (*decision.Answer, error)
}

// SearchTracesArgs are search_traces' arguments: POST /v1/search's body,
// every field but query optional.
type SearchTracesArgs struct {
	Query            string              `json:"query" jsonschema:"what the commits were about"`
	Filters          trace.SearchFilters `json:"filters,omitempty" jsonschema:"repo, areas (any of), status (pending, landed, reverted), mode, since (RFC 3339), author"`
	Limit            int                 `json:"limit,omitempty" jsonschema:"at most this many traces (default 10, at most 100)"`
	IncludeDecisions bool                `json:"include_decisions,omitempty" jsonschema:"also return the traces' matching decisions"`
	MinScore         float64             `json:"min_score,omitempty" jsonschema:"drop traces under this score"`
}

// PrecedentsArgs are precedents' arguments: a preset and what it needs.
type PrecedentsArgs struct {
	Preset   string `json:"preset" jsonschema:"decision_traces_by_precedent (epic or decision), decisions_by_epic (epic), decisions_by_pattern (pattern), file_assignment_history (file), review_decisions (status), review_decisions_rejected"`
	Epic     string `json:"epic,omitempty" jsonschema:"an epic id"`
	Decision string `json:"decision,omitempty" jsonschema:"a decision trace id, instead of epic"`
	Pattern  string `json:"pattern,omitempty" jsonschema:"a pattern id"`
	File     string `json:"file,omitempty" jsonschema:"a file path"`
	Status   string `json:"status,omitempty" jsonschema:"review_decisions: approved or needs_changes"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many decisions"`
}

// AddTraces adds search_traces (commit traces, as POST /v1/search) and
// precedents (the decision-trace presets, as GET /v1/decision-traces);
// either may be nil. Both answer through the policy slicer for the
// caller's clearance, as their HTTP routes do.
func AddTraces(r *Registry, traces TraceSearcher, precedents Precedents) {
	if traces != nil {
		AddTool(r, "search_traces", "Commit traces (what was changed, why, and whether it landed or was reverted) ranked for a query, with filters; as POST /v1/search.", auth.RouteRead,
			func(ctx context.Context, c Caller, in SearchTracesArgs) (*trace.SearchResponse, error) {
				return traces.Search(ctx, c.Specialist, trace.SearchRequest{Query: in.Query, Filters: in.Filters,
					Limit: in.Limit, IncludeDecisions: in.IncludeDecisions, MinScore: in.MinScore})
			})
	}
	if precedents != nil {
		AddTool(r, "precedents", "Decisions taken before, newest first, with their alternatives and outcomes: by precedent cited, epic, pattern or file; as GET /v1/decision-traces?preset=….", auth.RouteRead,
			func(ctx context.Context, c Caller, in PrecedentsArgs) (*decision.Answer, error) {
				return precedents.Preset(ctx, c.Specialist, decision.PresetQuery{Preset: in.Preset, Epic: in.Epic,
					Decision: in.Decision, Pattern: in.Pattern, File: in.File, Status: in.Status, Limit: in.Limit})
			})
	}
}
