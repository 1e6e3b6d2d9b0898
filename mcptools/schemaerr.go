package mcptools

import (
	"context"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
)

// The SDK validates a tool's arguments against its input schema before
// the tool runs, and answers a failure as a tool error in its own words:
//
//	validating "arguments": validating root: validating /properties/scope: validating /properties/session_id: type: 7 has type "integer", want "string"
//	validating "arguments": validating root: required: missing properties: ["scope"]
//	validating "arguments": validating root: unexpected additional properties ["verbose"]
//
// schemaErrors rewrites such a result into H4R's error shape, naming the
// argument as a dotted path (scope.session_id), so that every tool error
// has one shape. A message it cannot read is kept, still as an
// invalid_argument naming no field.
var (
	schemaStep    = regexp.MustCompile(`validating ((?:/properties/[^:/]+)+):`)
	schemaMissing = regexp.MustCompile(`missing properties: \["([^"]+)"`)
	schemaExtra   = regexp.MustCompile(`additional properties \["([^"]+)"`)
)

const schemaPrefix = `validating "arguments": `

func schemaErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || method != "tools/call" || !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		tc, ok := r.Content[0].(*mcp.TextContent)
		if !ok || !strings.HasPrefix(tc.Text, schemaPrefix) {
			return res, err
		}
		msg := strings.TrimPrefix(tc.Text, schemaPrefix)
		// Each step names the whole path so far: the last is the deepest.
		var path []string
		if steps := schemaStep.FindAllStringSubmatch(msg, -1); len(steps) > 0 {
			path = strings.Split(strings.TrimPrefix(steps[len(steps)-1][1], "/properties/"), "/properties/")
		}
		for _, re := range []*regexp.Regexp{schemaMissing, schemaExtra} {
			if m := re.FindStringSubmatch(msg); m != nil {
				path = append(path, m[1])
			}
		}
		field := strings.Join(path, ".")
		tc.Text = toolError(h4r.Errorf(h4r.EINVALID, field, "the arguments do not match the tool's input schema: %s", msg)).Error()
		return r, nil
	}
}
