package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// Caller is who a tool call is answered for.
type Caller struct {
	Specialist h4r.Specialist
	// Principal is the API key's principal, whose route classes the tools
	// check; nil when no keys are configured (the loopback server, where
	// every REST route is open too).
	Principal *auth.Principal
}

// Allows reports whether the caller may call tools of class r.
func (c Caller) Allows(r auth.Route) bool { return c.Principal == nil || c.Principal.Allows(r) }

// MayAudit reports whether the caller's packs may explain what policy hid.
func (c Caller) MayAudit() bool { return c.Principal != nil && c.Principal.MayAudit() }

// CallerOf is the caller of a principal (nil: no keys, the anonymous
// public specialist).
func CallerOf(p *auth.Principal) Caller {
	if p == nil {
		return Caller{Specialist: h4r.Anonymous()}
	}
	return Caller{Specialist: p.Specialist, Principal: p}
}

// Registry holds the tools and resources a server offers. Add to it
// before building servers; it is not safe for concurrent changes.
type Registry struct {
	name, version string
	tools         []func(*mcp.Server, callerFunc)
	resources     []func(*mcp.Server, callerFunc)
}

// NewRegistry returns an empty registry for a server that names itself
// name and version in the MCP handshake.
func NewRegistry(name, version string) *Registry {
	return &Registry{name: name, version: version}
}

// callerFunc says who a request comes from.
type callerFunc func(extra *mcp.RequestExtra) Caller

// AddTool adds a tool. Its input schema is inferred from In (a struct:
// json tags name the arguments, jsonschema tags describe them; a field
// without omitempty is required, unknown arguments are refused); its
// output schema from Out unless Out is any. run is called only when the
// caller's key allows class and the arguments passed the schema; its
// error becomes a tool error in H4R's error shape.
func AddTool[In, Out any](r *Registry, name, description string, class auth.Route, run func(ctx context.Context, c Caller, in In) (Out, error)) {
	r.tools = append(r.tools, func(s *mcp.Server, who callerFunc) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: description},
			func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
				var zero Out
				c := who(req.Extra)
				if !c.Allows(class) {
					return nil, zero, toolError(h4r.Errorf(h4r.EFORBIDDEN, "", "this key may not call %s tools such as %s", class, name))
				}
				out, err := run(ctx, c, in)
				if err != nil {
					return nil, zero, toolError(err)
				}
				return nil, out, nil
			})
	})
}

// AddResource adds a resource whose JSON read returns for the caller;
// callers whose key does not allow class get an error.
func (r *Registry) AddResource(uri, name, description string, class auth.Route, read func(ctx context.Context, c Caller) (any, error)) {
	r.resources = append(r.resources, func(s *mcp.Server, who callerFunc) {
		s.AddResource(&mcp.Resource{URI: uri, Name: name, Description: description, MIMEType: "application/json"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				c := who(req.Extra)
				if !c.Allows(class) {
					return nil, fmt.Errorf("this key may not read %s resources such as %s", class, uri)
				}
				v, err := read(ctx, c)
				if err != nil {
					return nil, fmt.Errorf("reading %s: %w", uri, err)
				}
				b, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("encoding %s: %w", uri, err)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
			})
	})
}

// server builds an MCP server holding every tool and resource.
func (r *Registry) server(who callerFunc) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: r.name, Version: r.version}, nil)
	s.AddReceivingMiddleware(schemaErrors)
	for _, add := range r.tools {
		add(s, who)
	}
	for _, add := range r.resources {
		add(s, who)
	}
	return s
}

// Run serves the registry on one transport (stdio for h4r mcp) for one
// fixed caller, until the client leaves or ctx ends.
func (r *Registry) Run(ctx context.Context, t mcp.Transport, c Caller) error {
	return r.server(func(*mcp.RequestExtra) Caller { return c }).Run(ctx, t)
}

// principalKey is where TokenInfo.Extra holds the principal.
const principalKey = "h4r.principal"

// HTTPHandler serves the registry over streamable HTTP. principalOf
// returns the principal the API server authenticated for a request (nil
// when no keys are configured). A session is bound to the key that opened
// it: a request of another key on it is refused (403).
func (r *Registry) HTTPHandler(principalOf func(*http.Request) *auth.Principal) http.Handler {
	srv := r.server(func(extra *mcp.RequestExtra) Caller {
		if extra == nil || extra.TokenInfo == nil {
			return CallerOf(nil)
		}
		p, _ := extra.TokenInfo.Extra[principalKey].(*auth.Principal)
		if p == nil {
			// A token info without a principal is never made here; refuse
			// rather than answer as the anonymous caller.
			return Caller{Specialist: h4r.Anonymous(), Principal: &auth.Principal{Specialist: h4r.Anonymous()}}
		}
		return CallerOf(p)
	})
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	verify := func(_ context.Context, _ string, req *http.Request) (*mcpauth.TokenInfo, error) {
		p := principalOf(req)
		if p == nil {
			return nil, mcpauth.ErrInvalidToken
		}
		return &mcpauth.TokenInfo{UserID: p.KeyID, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{principalKey: p}}, nil
	}
	keyed := mcpauth.RequireBearerToken(verify, nil)(streamable)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if principalOf(req) == nil {
			streamable.ServeHTTP(w, req) // no keys: the anonymous caller
			return
		}
		keyed.ServeHTTP(w, req)
	})
}

// toolErr is a tool's error, whose text is H4R's error shape.
type toolErr struct{ body []byte }

func (e toolErr) Error() string { return string(e.body) }

// toolError turns err into the error shape; an error that is not an
// *h4r.Error is internal, and its text is not shown.
func toolError(err error) error {
	herr, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		herr = &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error"}
	}
	b, jerr := json.Marshal(struct {
		Error *h4r.Error `json:"error"`
	}{herr})
	if jerr != nil {
		return err
	}
	return toolErr{b}
}
