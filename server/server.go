package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/rag"
)

// Defaults for options left unset.
const (
	DefaultMaxBodyBytes   = 4 << 20
	DefaultRequestTimeout = 2 * time.Second
	// DefaultRateLimitPerMinute is 60 context requests per minute per
	// key.
	DefaultRateLimitPerMinute = 60
	requestIDHeader           = "X-Request-Id"
)

// ContextPacker builds context packs from planned requests (engine.Engine).
// The server plans (validates) each request once, where it arrives.
type ContextPacker interface {
	Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error)
}

// ItemStore keeps items (store/sqlite.Store).
type ItemStore interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
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
	keys           Authenticator // nil: no authentication (loopback demo)
	limiter        *auth.Limiter // per-key rate limits of context requests
	metrics        *metrics.Metrics
	checks         []readinessCheck // backends /health/ready checks besides the store
	policy         PolicyReporter   // nil: no GET /v1/policy
	anonymousAudit bool             // without keys, packs explain what policy hid
	now            func() time.Time
	maxConns       int                    // connections served at once; 0: no cap (Listener)
	readTimeout    time.Duration          // for a request, body included, to arrive (HTTPServer)
	anyHost        bool                   // without keys, serve any Host (guardBrowser)
	access         map[string]routeAccess // "METHOD /path" → who may call it (register)
	openAPIDoc     []byte                 // the merged description (openapi.go)
	traces         TraceService           // nil: the trace routes answer unavailable (traces.go)
	traceOpts      TraceOptions
	storeCheck     string             // the store's name in /health/ready
	decisions      DecisionService    // nil: decision routes answer unavailable (decisions.go)
	linkLocks      keyedLocks         // link edits of one item, one at a time (links.go)
	bodies         jsonstrict.Decoder // request bodies and claims, each type's members worked out once
	ambient        AmbientHub         // nil: no GET /v1/subscribe (subscribe.go)
	pingEvery      time.Duration      // WebSocket keepalive (subscribe.go)
	wsGaugeOnce    sync.Once
	wsGauge        prometheus.Gauge
	memory         MemoryTools    // nil: no memory routes (memory.go)
	mcp            http.Handler   // nil: no MCP at /mcp (mcp.go)
	rag            *rag.Service   // POST /query and /feedback (query.go); nil: not served
	bridge         *bridge.Bridge // POST /v1/bridge (bridge.go); nil: results unchanged
	jobs           Jobs           // nil: no ingestion or background jobs (ingest.go)
	a2aOpts        A2AOptions     // the A2A protocol endpoint (a2aproto.go)
	limits         limits         // work per key, unauthenticated clients (rpclimit.go)
	console        *consoleState  // the web console's pages and sessions (console.go)
	browse         Browse         // what the console's browsers read (console_browse.go)
	consoleSecret  []byte         // nil: a random one (WithConsoleSecret)
}

// readinessCheck is one backend /health/ready checks.
type readinessCheck struct {
	name  string
	check func(context.Context) error
}

// Option configures a Server.
type Option func(*Server)

// WithMaxBodyBytes sets the request body size limit.
func WithMaxBodyBytes(n int64) Option { return func(s *Server) { s.maxBodyBytes = n } }

// WithRequestTimeout sets the deadline of a context-pack request.
func WithRequestTimeout(d time.Duration) Option { return func(s *Server) { s.requestTimeout = d } }

// WithLogger sets the logger. Records logged while serving a request carry
// its request id (LogHandler).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithAuthenticator requires an API key (Authorization: Bearer) on every
// route but the health probes, and makes the key's principal the
// specialist of its requests (auth.Keys).
func WithAuthenticator(a Authenticator) Option { return func(s *Server) { s.keys = a } }

// WithAnonymousAudit lets callers explain what policy hid from them (the
// ids, reasons and signals of denied items) when no keys are configured
// (H4R_ANONYMOUS_AUDIT). It is off by default: the anonymous loopback
// caller is treated as a read key without the audit class. With keys, the
// key's classes decide (audit or admin).
func WithAnonymousAudit(allow bool) Option { return func(s *Server) { s.anonymousAudit = allow } }

// WithRateLimit sets the requests per minute and route class (read,
// ingest, admin) allowed to a key that does not set its own limit
// (default 60). It applies only with keys.
func WithRateLimit(perMinute int) Option {
	return func(s *Server) { s.limiter = auth.NewLimiter(perMinute) }
}

// WithClock sets the clock of the rate limiter (tests fix it, so that
// whether a request is limited never depends on how fast the machine is).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithMetrics serves m at GET /metrics and records requests and packs in
// it. Without it the server makes its own.
func WithMetrics(m *metrics.Metrics) Option { return func(s *Server) { s.metrics = m } }

// WithMaxConnections caps the connections Listener serves at once
// (default DefaultMaxConnections); n <= 0 removes the cap.
func WithMaxConnections(n int) Option { return func(s *Server) { s.maxConns = max(n, 0) } }

// WithReadTimeout sets how long a request, its body included, may take to
// arrive (default DefaultReadTimeout); a body still arriving then is
// answered 408 request_timeout.
func WithReadTimeout(d time.Duration) Option { return func(s *Server) { s.readTimeout = d } }

// WithAnyHost serves requests addressed to any Host when no keys are
// configured. Without it such a server answers only loopback names, so
// that a web page cannot read it by DNS rebinding; cmd/h4r sets it for
// --insecure on a non-loopback address. Foreign Origins are still refused.
func WithAnyHost() Option { return func(s *Server) { s.anyHost = true } }

// WithStoreCheckName names the store's check in GET /health/ready
// ("postgres" for the Postgres store; default "store").
func WithStoreCheckName(name string) Option { return func(s *Server) { s.storeCheck = name } }

// WithReadinessCheck adds a backend that GET /health/ready checks besides
// the store (a vector index, a graph database, a remote policy).
func WithReadinessCheck(name string, check func(context.Context) error) Option {
	return func(s *Server) { s.checks = append(s.checks, readinessCheck{name, check}) }
}

// New returns a Server over an engine and a store.
func New(engine ContextPacker, store ItemStore, opts ...Option) *Server {
	s := &Server{
		engine: engine, store: store,
		maxBodyBytes: DefaultMaxBodyBytes, requestTimeout: DefaultRequestTimeout,
		log: slog.Default(), now: time.Now,
		maxConns: DefaultMaxConnections, readTimeout: DefaultReadTimeout,
		limits: defaultLimits(),
	}
	for _, o := range opts {
		o(s)
	}
	s.log = slog.New(LogHandler(s.log.Handler()))
	if s.limiter == nil {
		s.limiter = auth.NewLimiter(DefaultRateLimitPerMinute)
	}
	if s.metrics == nil {
		s.metrics = metrics.New()
	}
	if s.bridge != nil {
		s.metrics.RegisterBridge(s.bridge.Metrics(), s.log)
	}
	e := echo.New()
	e.Logger = s.log
	e.HTTPErrorHandler = s.handleError
	e.JSONSerializer = &wholeJSON{}
	// Order: the id first so every later log has it; the access log
	// around the recovery so that a panic is logged with its 500; the
	// browser guard before the authentication, both inside, after
	// routing, where the route is known; the media type once the caller is
	// known to be allowed.
	e.Use(s.requestID, s.accessLog, s.recoverPanic, s.guardBrowser, s.authenticate, s.requireJSON)
	s.register(e)
	doc, err := openAPIDocument()
	if err != nil {
		// The files are embedded at build time; TestOpenAPIParity fails
		// on any that would not merge, so this cannot happen in a build
		// that passed its tests.
		panic(fmt.Sprintf("server: the embedded OpenAPI description: %v", err))
	}
	s.openAPIDoc = doc
	console, err := newConsoleState()
	if err != nil {
		// Embedded too, and parsed by every test that builds a Server.
		panic(fmt.Sprintf("server: the embedded console pages: %v", err))
	}
	if s.consoleSecret != nil {
		console.secret = s.consoleSecret
	}
	s.console = console
	s.echo = e
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// errorBody is the item contract's error shape.
type errorBody struct {
	Error *h4r.Error `json:"error"`
}

// a2aPath is the route whose errors are ContextError envelopes.
const a2aPath = "/v1/a2a"

// handleError is the one place errors become responses (writeError).
func (s *Server) handleError(c *echo.Context, err error) {
	if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
		return
	}
	if jerr := s.writeError(c, err, ""); jerr != nil {
		s.log.Warn("writing error response", "error", jerr)
	}
}

// writeError answers err in the one error shape, or, on /v1/a2a (for a
// 405 there too), as a ContextError envelope replying to replyTo, the
// request's meta.id when it was read.
func (s *Server) writeError(c *echo.Context, err error, replyTo string) error {
	herr := toError(err)
	if herr.Code == h4r.EMETHOD {
		herr = h4r.Errorf(h4r.EMETHOD, "", "%s is not allowed on this route; it allows %s", c.Request().Method, c.Response().Header().Get("Allow"))
	}
	if interrupted(herr.Code) && clientClosed(c) {
		// The work failed because the client went away: a store reports
		// its cancelled statement in its own words (Postgres's 57014
		// "canceling statement due to user request"), and that is no
		// fault of the server's.
		herr = canceled()
	}
	status := HTTPStatus(herr.Code)
	if herr.Code == h4r.ECANCELED {
		s.metrics.Canceled(c.RouteInfo().Path)
	} else {
		s.metrics.Rejected(herr.Code)
	}
	switch herr.Code {
	case h4r.ECANCELED:
		// The access log records the 499 at info; what was interrupted
		// is for debugging only.
		s.log.DebugContext(c.Request().Context(), "request cancelled by the client", "path", c.Request().URL.Path, "error", err)
	case h4r.EINTERNAL:
		s.log.ErrorContext(c.Request().Context(), "request failed", "path", c.Request().URL.Path, "error", err)
	case h4r.ETIMEOUT:
		// The rest of the body was not read: the connection cannot carry
		// another request.
		c.Response().Header().Set("Connection", "close")
	case h4r.EUNAVAILABLE:
		// The client reads "busy"; the operator needs where it waited.
		s.log.WarnContext(c.Request().Context(), "request shed: the store is busy", "path", c.Request().URL.Path, "error", err)
	}
	if secs := retryAfter(err, herr.Code); secs != "" && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", secs)
	}
	if c.Path() != a2aPath {
		return c.JSON(status, errorBody{herr})
	}
	payload, jerr := json.Marshal(herr)
	if jerr != nil {
		return fmt.Errorf("encoding a context error: %w", jerr)
	}
	meta := h4r.EnvelopeMeta{ID: requestID(c), Type: h4r.TypeContextError, ReplyTo: replyTo, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	return c.JSON(status, h4r.Envelope{Meta: meta, Payload: payload})
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
			return h4r.Errorf(h4r.EMETHOD, "", "method not allowed on this route")
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return h4r.Errorf(h4r.EDEADLINE, "", "the request deadline expired")
	}
	if errors.Is(err, context.Canceled) {
		return canceled()
	}
	return &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error"}
}

// canceled is the error of a request its client closed before the answer.
func canceled() *h4r.Error {
	return h4r.Errorf(h4r.ECANCELED, "", "the client closed the request before it was answered; a write it interrupted was rolled back whole")
}

// interrupted reports whether an error of this code is what cancelling
// the work would produce: a failure, a busy store, a deadline. Other codes
// judge the request itself (a bad body, a body that came too slowly, whose
// read also ends the request's context) and stand.
func interrupted(code string) bool {
	return code == h4r.EINTERNAL || code == h4r.EUNAVAILABLE || code == h4r.EDEADLINE
}

// clientClosed reports whether the request's context was cancelled:
// net/http does so when the client closes the connection or a read of it
// fails (a deadline of the server's own ends derived contexts, never this
// one).
func clientClosed(c *echo.Context) bool {
	return errors.Is(c.Request().Context().Err(), context.Canceled)
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
				s.log.ErrorContext(c.Request().Context(), "panic in handler", "panic", r, "stack", string(debug.Stack()))
				err = &h4r.Error{Code: h4r.EINTERNAL, Message: "internal error (request " + requestID(c) + ")"}
			}
		}()
		return next(c)
	}
}

func (s *Server) live(c *echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// ready checks the store and every configured backend, each under its own
// second. The probe needs no key, so a failure's details go to the log, not
// into the answer.
func (s *Server) ready(c *echo.Context) error {
	name := s.storeCheck
	if name == "" {
		name = "store"
	}
	checks := append([]readinessCheck{{name, s.store.Ping}}, s.checks...)
	out := make(map[string]string, len(checks))
	status, code := "ready", http.StatusOK
	for _, ch := range checks {
		ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
		err := ch.check(ctx)
		cancel()
		if err != nil {
			s.log.WarnContext(c.Request().Context(), "readiness check failed", "check", ch.name, "error", err)
			out[ch.name] = "unavailable"
			status, code = "unavailable", http.StatusServiceUnavailable
			continue
		}
		out[ch.name] = "ok"
	}
	if s.policy != nil {
		out["policy"] = s.policyReadiness()
	}
	if s.bridge != nil {
		// Enrichment is not critical: a degraded bridge is shown, and the
		// server stays ready.
		out["context_bridge"] = s.bridge.Health()
	}
	return c.JSON(code, map[string]any{"status": status, "checks": out})
}

// serveMetrics serves the Prometheus metrics (admin keys only).
func (s *Server) serveMetrics(c *echo.Context) error {
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}
