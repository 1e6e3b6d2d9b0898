package server

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// Defaults of the limits that count work rather than requests.
const (
	// DefaultMaxBatch is the most calls one JSON-RPC batch on /mcp may
	// hold. Batches exist only in MCP's older protocol versions; a client
	// that needs more sends more requests, each counted.
	DefaultMaxBatch = 20
	// wsMaxRefused is how many messages in a row a WebSocket client may
	// send over its limit, each answered with an error frame, before the
	// connection is closed: a client that does not read its errors is
	// flooding.
	wsMaxRefused = 8
	// jsonrpcInvalidRequest is JSON-RPC 2.0's "Invalid Request" code.
	jsonrpcInvalidRequest = -32600
)

// limits are the server's limits on work per key and on unauthenticated
// clients (rpclimit.go, connlimit.go).
type limits struct {
	maxBatch        int            // calls in one JSON-RPC batch
	maxConnsPerAddr int            // connections of one remote address; 0: no cap
	unauthBytes     *bytesInFlight // bodies read before their signature is checked
}

func defaultLimits() limits {
	return limits{maxBatch: DefaultMaxBatch, maxConnsPerAddr: DefaultMaxConnectionsPerAddr,
		unauthBytes: newBytesInFlight(DefaultUnauthenticatedBytes)}
}

// WithMaxBatch sets the most calls a JSON-RPC batch on /mcp may hold
// (default DefaultMaxBatch); n < 1 is taken as 1.
func WithMaxBatch(n int) Option { return func(s *Server) { s.limits.maxBatch = max(n, 1) } }

// countBatches wraps the POST routes of a JSON-RPC table so that every call
// of a batch counts against the key's rate limit, not only the request
// that carries them (authenticate takes the first), and a batch over the
// cap is refused whole before any call runs.
func (s *Server) countBatches(table []route) []route {
	out := make([]route, len(table))
	for i, r := range table {
		out[i] = r
		if r.method == http.MethodPost && r.access.limited {
			bucket := r.access.class
			if r.access.bucket != "" {
				bucket = r.access.bucket
			}
			out[i].handler = s.countBatch(bucket, r.handler)
		}
	}
	return out
}

func (s *Server) countBatch(bucket auth.Route, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, s.maxBodyBytes))
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		n := batchLen(body)
		if n <= 1 {
			return next(c)
		}
		if n > s.limits.maxBatch {
			s.metrics.Rejected(h4r.EINVALID)
			return c.JSON(http.StatusBadRequest, jsonrpcError(h4r.Errorf(h4r.EINVALID, "",
				"a JSON-RPC batch holds at most %d calls, this one %d: send them in smaller batches", s.limits.maxBatch, n)))
		}
		p := principal(c)
		if p == nil || s.limiter == nil {
			return next(c)
		}
		// authenticate took one for the request; the other calls count too.
		if ok, wait := s.limiter.AllowN(p, bucket, s.now(), n-1); !ok {
			secs := retrySeconds(wait)
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			if per := s.limiter.PerMinute(p); n > per {
				return h4r.Errorf(h4r.EEXHAUSTED, "", "a batch of %d calls is more than this key's rate limit of %d a minute for %s routes: send fewer calls at once", n, per, bucket)
			}
			return h4r.Errorf(h4r.EEXHAUSTED, "", "rate limit of this key for %s routes reached: a batch of %d calls counts %d; retry in %d s", bucket, n, n, secs)
		}
		return next(c)
	}
}

// batchLen is the number of messages of a JSON-RPC batch (a JSON array),
// or 0 when body is not one; a malformed array is left to the handler.
func batchLen(body []byte) int {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0
	}
	var msgs []json.RawMessage
	if json.Unmarshal(trimmed, &msgs) != nil {
		return 0
	}
	return len(msgs)
}

// jsonrpcErrorBody is a JSON-RPC 2.0 error answer; data carries the error
// in H4R's shape.
type jsonrpcErrorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *int            `json:"id"`
	Error   jsonrpcErrorObj `json:"error"`
}

type jsonrpcErrorObj struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *h4r.Error `json:"data"`
}

func jsonrpcError(herr *h4r.Error) jsonrpcErrorBody {
	return jsonrpcErrorBody{JSONRPC: "2.0", Error: jsonrpcErrorObj{Code: jsonrpcInvalidRequest, Message: herr.Message, Data: herr}}
}

// retrySeconds is a wait as a Retry-After: whole seconds, at least one.
func retrySeconds(wait time.Duration) int {
	return max(int(math.Ceil(wait.Seconds())), 1)
}

// allowMessage counts one WebSocket message of p against its message
// bucket (auth.RouteWSMessage); without keys nothing is counted.
func (s *Server) allowMessage(p *auth.Principal) *h4r.Error {
	if p == nil || s.limiter == nil {
		return nil
	}
	if ok, wait := s.limiter.Allow(p, auth.RouteWSMessage, s.now()); !ok {
		return h4r.Errorf(h4r.EEXHAUSTED, "", "rate limit of this key's WebSocket messages (%d a minute) reached; the message was dropped: retry in %d s", s.limiter.PerMinute(p), retrySeconds(wait))
	}
	return nil
}
