package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// Upstream is another MCP server H4R is a client of (an SDK
// *mcp.ClientSession).
type Upstream interface {
	ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error)
	CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)
}

// UpstreamOptions configure AddUpstream.
type UpstreamOptions struct {
	// Prefix is put before each upstream tool's name, so that its tools
	// cannot take the names of H4R's own ("" keeps the names).
	Prefix string
	// Class is the route class a key needs to call them (default read).
	Class auth.Route
	// Bridge attaches context to their results; nil passes them through.
	Bridge Enricher
}

// AddUpstream is the bridge contract's middleware: it re-exposes every tool the
// upstream server lists (name, description and schemas as listed, but
// for boolean schemas, made objects as AddTool does), forwards each call
// to it, and attaches the context bridge's block for the caller to a
// successful result: one more text content holding
// {"context_bridge": …} and the same block in the result's _meta, the
// upstream's own content and structured content unchanged. The block is
// computed for the caller's specialist (its reads pass the policy
// slicer), with the upstream tool's own name against the bridge's
// allow-list; when the bridge is off, the tool is not allow-listed or the
// enrichment fails, the result is the upstream's as it was. A caller whose
// key lacks Class gets a permission_denied tool error and the upstream is
// not called. The tools are listed once, now; it returns their names as
// exposed.
func AddUpstream(ctx context.Context, r *Registry, up Upstream, o UpstreamOptions) ([]string, error) {
	if o.Class == "" {
		o.Class = auth.RouteRead
	}
	var tools []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for {
		res, err := up.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing the upstream MCP server's tools: %w", err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	var names []string
	for _, t := range tools {
		exposed := *t
		exposed.Name = o.Prefix + t.Name
		exposed.InputSchema = portable(t.InputSchema)
		exposed.OutputSchema = portable(t.OutputSchema)
		names = append(names, exposed.Name)
		upstreamName := t.Name
		r.tools = append(r.tools, func(s *mcp.Server, who callerFunc) {
			s.AddTool(&exposed, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return forward(ctx, up, o, upstreamName, who(req.Extra), req.Params.Arguments), nil
			})
		})
	}
	return names, nil
}

// portable is an upstream's tool schema as schemaFor makes H4R's own:
// without boolean schemas, which would make strict clients refuse H4R's
// whole tools/list. A schema that does not parse is kept as listed.
func portable(schema any) any {
	if schema == nil {
		return nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return schema
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return schema
	}
	noBooleans(&s)
	return &s
}

// forward calls the upstream tool for c and enriches its result.
func forward(ctx context.Context, up Upstream, o UpstreamOptions, tool string, c Caller, raw json.RawMessage) *mcp.CallToolResult {
	if !c.Allows(o.Class) {
		return errorResult(h4r.Errorf(h4r.EFORBIDDEN, "", "this key may not call %s tools such as %s", o.Class, o.Prefix+tool))
	}
	var args map[string]any
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return errorResult(h4r.Errorf(h4r.EINVALID, "arguments", "the arguments must be a JSON object: %v", err))
		}
	}
	res, err := up.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return errorResult(h4r.Errorf(h4r.EUNAVAILABLE, "", "the upstream MCP server failed on %s: %v", tool, err))
	}
	if res.IsError || o.Bridge == nil {
		return res
	}
	result := res.StructuredContent
	if result == nil {
		var sb strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		result = sb.String()
	}
	blk := o.Bridge.Enrich(ctx, c.Specialist, tool, args, result).ContextBridge
	if blk == nil {
		return res
	}
	b, err := json.Marshal(map[string]any{"context_bridge": blk})
	if err != nil {
		return res // enrichment never fails the call
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: string(b)})
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta["context_bridge"] = blk
	return res
}

// errorResult is a tool error in H4R's error shape.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: toolError(err).Error()}}}
}
