package mcptools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
)

// FuzzSchemaErrors: whatever the SDK's message holds (it quotes the
// caller's values), the rewritten result is a tool error whose text is
// the error shape, invalid_argument.
func FuzzSchemaErrors(f *testing.F) {
	for _, seed := range []string{
		`validating root: required: missing properties: ["scope"]`,
		`validating root: validating /properties/scope: validating /properties/scope/properties/session_id: type: 7 has type "integer", want "string"`,
		`validating root: unexpected additional properties ["verbose"]`,
		`validating /properties/: x`, `missing properties: ["`, ``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: schemaPrefix + msg}}}, nil
		}
		res, err := schemaErrors(next)(context.Background(), "tools/call", nil)
		if err != nil {
			t.Fatal(err)
		}
		r := res.(*mcp.CallToolResult)
		var body struct {
			Error *h4r.Error `json:"error"`
		}
		text := r.Content[0].(*mcp.TextContent).Text
		if !r.IsError || json.Unmarshal([]byte(text), &body) != nil || body.Error == nil || body.Error.Code != h4r.EINVALID {
			t.Fatalf("rewritten to %q", text)
		}
	})
}
