package server

import (
	"context"
	"net/http"
	"strings"

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
	w := &mcpRefusals{ResponseWriter: c.Response()}
	s.mcp.ServeHTTP(w, r)
	if w.status != 0 {
		// The SDK refused in plain text: answer in the one error shape,
		// keeping its status (a client re-initialises on 404).
		w.ResponseWriter.Header().Del("Content-Type")
		msg := strings.TrimSpace(w.body.String())
		if msg == "session user mismatch" {
			msg = "this MCP session was opened with another API key: open a session of your own (initialize without Mcp-Session-Id)"
		}
		herr := &h4r.Error{Code: mcpRefusalCode(w.status), Message: msg}
		if herr.Code == h4r.EINTERNAL {
			s.log.ErrorContext(r.Context(), "the MCP transport failed", "error", herr.Message)
			herr.Message = "internal error"
		}
		return c.JSON(w.status, errorBody{herr})
	}
	return nil
}

// mcpRefusals holds back a refusal the MCP SDK writes as plain text
// (http.Error: "session user mismatch", "session not found", a missing
// Accept), so that serveMCP can answer it as JSON; everything else,
// JSON-RPC and event streams, passes through.
type mcpRefusals struct {
	http.ResponseWriter
	status int // the held-back refusal's, 0 when none
	body   strings.Builder
}

func (w *mcpRefusals) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *mcpRefusals) Write(b []byte) (int, error) {
	if w.status != 0 {
		if w.body.Len() < maxRefusalBytes {
			w.body.Write(b[:min(len(b), maxRefusalBytes-w.body.Len())])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// maxRefusalBytes bounds the refusal text kept (the SDK's are one line).
const maxRefusalBytes = 1 << 10

func (w *mcpRefusals) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *mcpRefusals) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpRefusalCode is the error code of an HTTP status the MCP SDK refused
// with.
func mcpRefusalCode(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusNotAcceptable, http.StatusRequestEntityTooLarge, http.StatusConflict:
		return h4r.EINVALID
	case http.StatusUnauthorized:
		return h4r.EUNAUTH
	case http.StatusForbidden:
		return h4r.EFORBIDDEN
	case http.StatusNotFound:
		return h4r.ENOTFOUND
	case http.StatusMethodNotAllowed:
		return h4r.EMETHOD
	case http.StatusUnsupportedMediaType:
		return h4r.EMEDIATYPE
	case http.StatusTooManyRequests:
		return h4r.EEXHAUSTED
	case http.StatusServiceUnavailable:
		return h4r.EUNAVAILABLE
	}
	return h4r.EINTERNAL
}
