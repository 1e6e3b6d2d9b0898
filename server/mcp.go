package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// MCPServer serves MCP over streamable HTTP (mcptools.Registry).
// principalOf returns the principal authenticate found for a request.
type MCPServer interface {
	HTTPHandler(principalOf func(*http.Request) *auth.Principal) http.Handler
}

// WithMCP serves MCP at /mcp (streamable HTTP) with the same bearer keys
// as the REST routes; each tool checks the route class it needs.
func WithMCP(m MCPServer) Option {
	return func(s *Server) {
		s.mcp = m.HTTPHandler(func(r *http.Request) *auth.Principal {
			p, _ := r.Context().Value(mcpPrincipal{}).(*auth.Principal)
			return p
		})
	}
}

// mcpPrincipal is the request context key of the authenticated principal
// handed to the MCP handler.
type mcpPrincipal struct{}

// mcpRoutes are the streamable HTTP transport's methods. Any valid key
// may open a session; the tools check read and ingest themselves. Each
// request counts against the key's rate limit (mcpRoute).
func (s *Server) mcpRoutes() []route {
	return []route{
		{"POST", "/mcp", s.serveMCP, mcpRoute},
		{"GET", "/mcp", s.serveMCP, mcpRoute},
		{"DELETE", "/mcp", s.serveMCP, mcpRoute},
	}
}

func (s *Server) serveMCP(c *echo.Context) error {
	if s.mcp == nil {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "MCP is not configured on this server")
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, s.maxBodyBytes)
	if p := principal(c); p != nil {
		r = r.WithContext(context.WithValue(r.Context(), mcpPrincipal{}, p))
	}
	s.mcp.ServeHTTP(c.Response(), r)
	return nil
}
