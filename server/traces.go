package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

// TraceService ingests, searches and reads commit traces and applies
// GitHub outcomes (trace.Service).
type TraceService interface {
	Ingest(ctx context.Context, t *trace.CommitTrace) (*trace.CommitTrace, error)
	Search(ctx context.Context, spec h4r.Specialist, req trace.SearchRequest) (*trace.SearchResponse, error)
	Get(ctx context.Context, spec h4r.Specialist, repo, sha string) (map[string]any, error)
	GetBySHA(ctx context.Context, spec h4r.Specialist, sha string) (map[string]any, error)
	Stats(ctx context.Context, vectors trace.VectorCounter, size trace.DatabaseSizer) (*trace.Stats, error)
	CountTraces(ctx context.Context, repo string) (int, error)
	HandleGitHub(ctx context.Context, event, delivery string, body []byte) (*trace.WebhookResult, error)
}

// TraceOptions configure the trace routes.
type TraceOptions struct {
	// WebhookSecret verifies X-Hub-Signature-256; empty refuses every
	// webhook delivery.
	WebhookSecret []byte
	// Vectors counts the vector index for GET /v1/stats; nil: 0.
	Vectors trace.VectorCounter
	// DatabaseSize measures the store's database for GET /v1/stats
	// (postgres_size_mb); nil: 0.
	DatabaseSize trace.DatabaseSizer
}

// MaxWebhookBytes is the largest webhook body read: GitHub caps payloads
// at 25 MB.
const MaxWebhookBytes = 25 << 20

// WithTraces serves the commit-trace routes over svc.
func WithTraces(svc TraceService, o TraceOptions) Option {
	return func(s *Server) { s.traces, s.traceOpts = svc, o }
}

// signedRoute is the GitHub webhook's access: GitHub has no API key, so
// the route needs none; the handler authenticates every delivery by its
// X-Hub-Signature-256 (an HMAC of the body under the shared secret) before
// it reads anything, and refuses all when no secret is configured.
var signedRoute = routeAccess{public: true}

// traceRoutes are the Context Graph Service's capture, outcome and query
// routes, with the wire format's paths and field names.
func (s *Server) traceRoutes() []route {
	return []route{
		{"POST", "/v1/traces", s.ingestTrace, ingestRoute},
		{"POST", "/v1/search", s.searchTraces, readRoute},
		{"GET", "/v1/trace/:owner/:name/:sha", s.getTrace, readRoute},
		{"GET", "/v1/trace/:sha", s.getTraceBySHA, readRoute},
		// Counts of every trace whatever its policy: admin.
		{"GET", "/v1/stats", s.traceStats, adminRoute},
		{"POST", "/webhook/github", s.githubWebhook, signedRoute},
	}
}

func (s *Server) traceService() (TraceService, error) {
	if s.traces == nil {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "commit traces are not configured on this server")
	}
	return s.traces, nil
}

func (s *Server) ingestTrace(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	t, err := readDecoded(s, c, trace.Decode)
	if err != nil {
		return err
	}
	stored, err := svc.Ingest(c.Request().Context(), t)
	if err != nil {
		return err
	}
	// Sessions subscribed to ambient precedents hear of the new trace.
	s.ingested(c.Request().Context(), []string{trace.ItemID(stored.Repo, stored.SHA)})
	return c.JSON(http.StatusOK, map[string]any{"trace": stored})
}

func (s *Server) searchTraces(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	req, err := decodeBody[trace.SearchRequest](s, c)
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.requestTimeout)
	defer cancel()
	out, err := svc.Search(ctx, spec, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getTrace(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	t, err := svc.Get(c.Request().Context(), spec, c.Param("owner")+"/"+c.Param("name"), c.Param("sha"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"trace": t})
}

func (s *Server) getTraceBySHA(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	t, err := svc.GetBySHA(c.Request().Context(), spec, c.Param("sha"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"trace": t})
}

func (s *Server) traceStats(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	st, err := svc.Stats(c.Request().Context(), s.traceOpts.Vectors, s.traceOpts.DatabaseSize)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// githubWebhook verifies a delivery's signature over the raw body before
// anything else reads it, then applies it.
func (s *Server) githubWebhook(c *echo.Context) error {
	svc, err := s.traceService()
	if err != nil {
		return err
	}
	if len(s.traceOpts.WebhookSecret) == 0 {
		// Refused before the body is read: an unconfigured webhook costs
		// nothing to call.
		return trace.VerifySignature(nil, nil, "")
	}
	r := c.Request()
	// The body is read before anyone vouches for it: it takes its room
	// from the bound on unauthenticated bytes (connlimit.go) until the
	// delivery is answered.
	body, release, err := s.limits.unauthBytes.readAll(r.Context(), http.MaxBytesReader(c.Response(), r.Body, MaxWebhookBytes))
	if err != nil {
		return err
	}
	defer release()
	if err := trace.VerifySignature(s.traceOpts.WebhookSecret, body, r.Header.Get("X-Hub-Signature-256")); err != nil {
		return err
	}
	out, err := svc.HandleGitHub(r.Context(), r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery"), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
