package mcptools

import (
	"context"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
)

// Enricher is the context bridge (bridge.Bridge).
type Enricher interface {
	Enrich(ctx context.Context, spec h4r.Specialist, tool string, params map[string]any, result any) bridge.Response
}

// BridgeArgs are context_bridge's arguments: POST /v1/bridge's body.
type BridgeArgs struct {
	Tool   string         `json:"tool" jsonschema:"the name of the tool that was called (the bridge answers only its allow-list)"`
	Params map[string]any `json:"params" jsonschema:"the call's parameters; the text is read from content, description, problem, situation, question or query, and domain from domain"`
	Result any            `json:"result,omitempty" jsonschema:"the tool's own result, returned unchanged"`
}

// AddBridge adds context_bridge: the trajectories similar
// to a tool call that the caller may see, as {result, context_bridge?},
// like POST /v1/bridge. b answers for the caller's specialist, so its
// reads pass the policy slicer; when the bridge is off, or the tool is
// not on its allow-list, context_bridge is absent.
func AddBridge(r *Registry, b Enricher) {
	AddTool(r, "context_bridge", "The context bridge: past trajectories similar to a tool call {tool, params, result?}, as {result, context_bridge{version, matches[{trajectory_id, session_id, similarity, summary, success_score, quality_score}], recommendation, similarity_mode}}; context_bridge is absent when the bridge is off or the tool is not on its allow-list.", auth.RouteRead,
		func(ctx context.Context, c Caller, in BridgeArgs) (bridge.Response, error) {
			switch {
			case in.Tool == "":
				return bridge.Response{}, h4r.Errorf(h4r.EINVALID, "tool", "tool is required")
			case len(in.Tool) > h4r.MaxIDBytes:
				return bridge.Response{}, h4r.Errorf(h4r.EINVALID, "tool", "tool is longer than %d bytes", h4r.MaxIDBytes)
			case in.Params == nil:
				return bridge.Response{}, h4r.Errorf(h4r.EINVALID, "params", "params is required (an object)")
			}
			return b.Enrich(ctx, c.Specialist, in.Tool, in.Params, in.Result), nil
		})
}
