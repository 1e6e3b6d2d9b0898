package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/internal/jsonstrict"
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
	resourceClass map[string]auth.Route // by URI
	log           *slog.Logger
}

// NewRegistry returns an empty registry for a server that names itself
// name and version in the MCP handshake.
func NewRegistry(name, version string) *Registry {
	return &Registry{name: name, version: version, log: slog.Default()}
}

// SetLogger sets where internal errors of tools and resources are logged
// (their callers are told only "internal error"); slog.Default otherwise.
func (r *Registry) SetLogger(l *slog.Logger) { r.log = l }

// logInternal logs err when it is internal: not an *h4r.Error, whose
// message the caller sees anyway.
func (r *Registry) logInternal(ctx context.Context, what string, err error) {
	if _, ok := errors.AsType[*h4r.Error](err); !ok {
		r.log.ErrorContext(ctx, "MCP "+what+" failed", "error", err)
	}
}

// callerFunc says who a request comes from.
type callerFunc func(extra *mcp.RequestExtra) Caller

// AddTool adds a tool. Its input schema is inferred from In (a struct:
// json tags name the arguments, jsonschema tags describe them; a field
// without omitempty is required, unknown arguments are refused); its
// output schema from Out unless Out is any; both as schemaFor makes them.
// run is called only when the caller's key allows class and the
// arguments passed the schema and decoded strictly into an In; its error,
// and a decoding error naming the argument (filters.since), become a tool
// error in H4R's error shape. A type whose schema cannot be inferred is a
// programming error: AddTool panics, as the SDK's AddTool does.
func AddTool[In, Out any](r *Registry, name, description string, class auth.Route, run func(ctx context.Context, c Caller, in In) (Out, error)) {
	tool := &mcp.Tool{Name: name, Description: description}
	in, err := schemaFor[In]()
	if err != nil {
		panic(fmt.Sprintf("mcptools: tool %s: input: %v", name, err))
	}
	tool.InputSchema = in
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		out, err := schemaFor[Out]()
		if err != nil {
			panic(fmt.Sprintf("mcptools: tool %s: output: %v", name, err))
		}
		tool.OutputSchema = out
	}
	r.tools = append(r.tools, func(s *mcp.Server, who callerFunc) {
		// The SDK checks the arguments against the schema; they are
		// decoded here, so that a value the schema lets through but the Go
		// type refuses (a since that is no RFC 3339 time) is an error
		// naming its field, not encoding/json's words.
		mcp.AddTool(s, tool,
			func(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage) (*mcp.CallToolResult, Out, error) {
				var zero Out
				c := who(req.Extra)
				if !c.Allows(class) {
					return nil, zero, toolError(h4r.Errorf(h4r.EFORBIDDEN, "", "this key may not call %s tools such as %s", class, name))
				}
				if len(raw) == 0 || string(raw) == "null" {
					raw = json.RawMessage("{}")
				}
				var in In
				if err := jsonstrict.Decode(raw, &in, ""); err != nil {
					return nil, zero, toolError(err)
				}
				out, err := run(ctx, c, in)
				if err != nil {
					r.logInternal(ctx, "tool "+name, err)
					return nil, zero, toolError(err)
				}
				return nil, out, nil
			})
	})
}

// AddResource adds a resource whose JSON read returns for the caller. A
// caller whose key does not allow class does not see it in
// resources/list, and reading it answers as for a resource that does not
// exist (-32602, invalid params, as the MCP specification has it), so that
// the list and the reads agree.
func (r *Registry) AddResource(uri, name, description string, class auth.Route, read func(ctx context.Context, c Caller) (any, error)) {
	if r.resourceClass == nil {
		r.resourceClass = map[string]auth.Route{}
	}
	r.resourceClass[uri] = class
	r.resources = append(r.resources, func(s *mcp.Server, who callerFunc) {
		s.AddResource(&mcp.Resource{URI: uri, Name: name, Description: description, MIMEType: "application/json"},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				c := who(req.Extra)
				if !c.Allows(class) {
					return nil, mcp.ResourceNotFoundError(uri)
				}
				text, err := readJSON(ctx, c, read)
				if err != nil {
					r.logInternal(ctx, "resource "+uri, err)
					return nil, resourceError(uri, err)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: text}}}, nil
			})
	})
}

// readJSON is what read returns for c, as JSON.
func readJSON(ctx context.Context, c Caller, read func(ctx context.Context, c Caller) (any, error)) (string, error) {
	v, err := read(ctx, c)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding the resource: %w", err)
	}
	return string(b), nil
}

// resourceError is a failed read as a JSON-RPC internal error, whose
// message is H4R's (an *h4r.Error's, or "internal error") and whose data
// is the error shape.
func resourceError(uri string, err error) error {
	herr, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		herr = &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error"}
	}
	data, jerr := json.Marshal(struct {
		Error *h4r.Error `json:"error"`
		URI   string     `json:"uri"`
	}{herr, uri})
	if jerr != nil {
		data = nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading " + uri + ": " + herr.Message, Data: data}
}

// listedFor keeps, of a resources/list answer, the resources the caller
// may read.
func (r *Registry) listedFor(who callerFunc) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListResourcesResult)
			if err != nil || method != "resources/list" || !ok {
				return res, err
			}
			c := who(req.GetExtra())
			kept := []*mcp.Resource{}
			for _, res := range list.Resources {
				if class, ok := r.resourceClass[res.URI]; !ok || c.Allows(class) {
					kept = append(kept, res)
				}
			}
			list.Resources = kept
			return list, nil
		}
	}
}

// rpcCodes gives every protocol error a code JSON-RPC defines: the SDK
// answers an error that is not a *jsonrpc.Error with code 0.
func rpcCodes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			return res, nil
		}
		if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
			return res, err
		}
		if herr, ok := errors.AsType[*h4r.Error](err); ok {
			code := int64(jsonrpc.CodeInternalError)
			if herr.Code == h4r.EINVALID {
				code = jsonrpc.CodeInvalidParams
			}
			return res, &jsonrpc.Error{Code: code, Message: herr.Error()}
		}
		return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}

// server builds an MCP server holding every tool and resource.
func (r *Registry) server(who callerFunc) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: r.name, Version: r.version}, nil)
	// Middleware added first is outermost: codes are given after the
	// other two have answered.
	s.AddReceivingMiddleware(rpcCodes, r.listedFor(who), schemaErrors)
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
