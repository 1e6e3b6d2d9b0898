package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
)

// LogHandler wraps h so that every record logged with a request's context
// carries its request id as "request_id" — the engine's and the store's
// logs included, when their logger is built on the same handler (cmd/h4r
// does this).
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := h4r.RequestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// validRequestID accepts a client's X-Request-Id only when it is short and
// made of characters that are safe in headers, logs and file names.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		default:
			return false
		}
	}
	return true
}

// requestID gives every request an id, taken from X-Request-Id when the
// client sent a sane one, returns it in the same header, and puts it in the
// request's context for the logs.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id := c.Request().Header.Get(requestIDHeader)
		if !validRequestID(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = "req-" + hex.EncodeToString(b[:])
		}
		c.Set(requestIDHeader, id)
		c.Response().Header().Set(requestIDHeader, id)
		c.SetRequest(c.Request().WithContext(h4r.WithRequestID(c.Request().Context(), id)))
		return next(c)
	}
}

func requestID(c *echo.Context) string {
	id, _ := c.Get(requestIDHeader).(string)
	return id
}

// accessLog writes one log line per request and records its metrics. It
// hands an error to the error handler itself so that it can log the status
// that was sent.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			s.handleError(c, err)
		}
		took := time.Since(start)
		status := 0
		if r, _ := echo.UnwrapResponse(c.Response()); r != nil {
			status = r.Status
		}
		route := c.RouteInfo().Path
		if s.metrics != nil {
			s.metrics.ObserveRequest(route, status, took)
		}
		attrs := []any{"method", c.Request().Method, "route", route, "path", c.Request().URL.Path,
			"status", status, "duration_ms", float64(took.Microseconds()) / 1000}
		if p := principal(c); p != nil {
			attrs = append(attrs, "key", p.KeyID, "principal", p.Specialist.ID)
		}
		s.log.InfoContext(c.Request().Context(), "request", attrs...)
		return nil
	}
}
