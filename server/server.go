package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

// Defaults for options left unset.
const (
	DefaultMaxBodyBytes   = 4 << 20
	DefaultRequestTimeout = 2 * time.Second
	requestIDHeader       = "X-Request-Id"
)

// ContextPacker builds context packs (engine.Engine).
type ContextPacker interface {
	ContextPack(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest) (*h4r.Pack, error)
}

// ItemStore keeps items (sources/sqlite.Store).
type ItemStore interface {
	Upsert(ctx context.Context, items []sources.Item) ([]string, error)
	Get(ctx context.Context, id string) (*sources.Item, error)
	Delete(ctx context.Context, id string) error
	Ping(ctx context.Context) error
}

// Server is the HTTP API. Create it with New and serve Handler().
type Server struct {
	engine         ContextPacker
	store          ItemStore
	maxBodyBytes   int64
	requestTimeout time.Duration
	log            *slog.Logger
	echo           *echo.Echo
}

// Option configures a Server.
type Option func(*Server)

// WithMaxBodyBytes sets the request body size limit.
func WithMaxBodyBytes(n int64) Option { return func(s *Server) { s.maxBodyBytes = n } }

// WithRequestTimeout sets the deadline of a context-pack request.
func WithRequestTimeout(d time.Duration) Option { return func(s *Server) { s.requestTimeout = d } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// New returns a Server over an engine and a store.
func New(engine ContextPacker, store ItemStore, opts ...Option) *Server {
	s := &Server{
		engine: engine, store: store,
		maxBodyBytes: DefaultMaxBodyBytes, requestTimeout: DefaultRequestTimeout,
		log: slog.Default(),
	}
	for _, o := range opts {
		o(s)
	}
	e := echo.New()
	e.Logger = s.log
	e.HTTPErrorHandler = s.handleError
	e.Use(s.requestID, s.recoverPanic)
	e.POST("/v1/context-pack", s.contextPack)
	e.POST("/v1/a2a", s.a2a)
	e.POST("/v1/items", s.upsertItems)
	e.GET("/v1/items/:id", s.getItem)
	e.DELETE("/v1/items/:id", s.deleteItem)
	e.GET("/health/live", s.live)
	e.GET("/health/ready", s.ready)
	e.GET("/openapi.json", s.openAPI)
	s.echo = e
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// errorBody is DESIGN.md's error shape.
type errorBody struct {
	Error *h4r.Error `json:"error"`
}

// handleError is the one place errors become responses.
func (s *Server) handleError(c *echo.Context, err error) {
	if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
		return
	}
	herr := toError(err)
	status := h4r.HTTPStatus(herr.Code)
	if herr.Code == h4r.EINTERNAL {
		s.log.ErrorContext(c.Request().Context(), "request failed", "request_id", requestID(c), "path", c.Request().URL.Path, "error", err)
	}
	if jerr := c.JSON(status, errorBody{herr}); jerr != nil {
		s.log.Warn("writing error response", "error", jerr)
	}
}

// toError maps any error to an *h4r.Error that is safe to show a client.
func toError(err error) *h4r.Error {
	var herr *h4r.Error
	if errors.As(err, &herr) {
		return herr
	}
	var maxBytes *http.MaxBytesError
	if errors.As(err, &maxBytes) {
		return h4r.Errorf(h4r.EINVALID, "", "request body is larger than %d bytes", maxBytes.Limit)
	}
	var sc echo.HTTPStatusCoder
	if errors.As(err, &sc) {
		switch sc.StatusCode() {
		case http.StatusNotFound:
			return h4r.Errorf(h4r.ENOTFOUND, "", "no such route")
		case http.StatusMethodNotAllowed:
			return h4r.Errorf(h4r.EINVALID, "", "method not allowed on this route")
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return h4r.Errorf(h4r.EDEADLINE, "", "the request deadline expired")
	}
	return &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error"}
}

// requestID gives every request an id, taken from X-Request-Id when the
// client sent a sane one, and returns it in the same header.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id := c.Request().Header.Get(requestIDHeader)
		if id == "" || len(id) > 128 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = "req-" + hex.EncodeToString(b[:])
		}
		c.Set(requestIDHeader, id)
		c.Response().Header().Set(requestIDHeader, id)
		return next(c)
	}
}

func requestID(c *echo.Context) string {
	id, _ := c.Get(requestIDHeader).(string)
	return id
}

// recoverPanic turns a panic in a handler into an internal error, logged
// with the request id, instead of a dropped connection.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.ErrorContext(c.Request().Context(), "panic in handler", "request_id", requestID(c), "panic", r)
				err = &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error (request " + requestID(c) + ")"}
			}
		}()
		return next(c)
	}
}

func (s *Server) live(c *echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) ready(c *echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "error", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": map[string]string{"store": err.Error()}})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "checks": map[string]string{"store": "ok"}})
}
