package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/trace"
)

// Jobs starts and reports background jobs (app.Jobs).
type Jobs interface {
	StartIngest(ctx context.Context, owner string, req ingest.Request) (jobs.Job, error)
	// StartReindex starts a reindex job: embeddings regenerates the
	// vector index, graph rebuilds the Neo4j graph.
	StartReindex(ctx context.Context, owner string, graph, embeddings bool) (jobs.Job, error)
	Get(ctx context.Context, id string) (jobs.Job, error)
	Unschedule(ctx context.Context, id string) (jobs.Job, error)
}

// WithJobs serves POST /ingest, GET /v1/jobs/{id} and POST /v1/reindex
// with j. Without it they answer 503 unavailable.
func WithJobs(j Jobs) Option { return func(s *Server) { s.jobs = j } }

// ingestRoutes: source ingestion (POST /ingest), job status
// and the background reindex.
func (s *Server) ingestRoutes() []route {
	return []route{
		{"POST", "/ingest", s.ingestSources, ingestRoute},
		// Polling a job's progress is cheap and frequent: it does not use
		// up the key's ingest rate limit.
		{"GET", "/v1/jobs/:id", s.getJob, routeAccess{class: auth.RouteIngest}},
		{"DELETE", "/v1/jobs/:id/schedule", s.unscheduleJob, ingestRoute},
		{"POST", "/v1/reindex", s.startReindex, adminRoute},
	}
}

// ingestResponse is POST /ingest's answer: the job and its stats so far.
type ingestResponse struct {
	JobID string        `json:"job_id"`
	State string        `json:"state"`
	Stats jobs.Progress `json:"stats"`
}

func (s *Server) jobService() (Jobs, error) {
	if s.jobs == nil {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "background jobs are not configured on this server")
	}
	return s.jobs, nil
}

func (s *Server) ingestSources(c *echo.Context) error {
	js, err := s.jobService()
	if err != nil {
		return err
	}
	req, err := decodeBody[ingest.Request](s, c)
	if err != nil {
		return err
	}
	owner, _ := jobViewer(c)
	j, err := js.StartIngest(c.Request().Context(), owner, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, ingestResponse{JobID: j.ID, State: j.State, Stats: j.Progress})
}

func (s *Server) getJob(c *echo.Context) error {
	js, err := s.jobService()
	if err != nil {
		return err
	}
	id := c.Param("id")
	j, err := js.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	// Another key's job answers as a job that does not exist: its id,
	// sources and errors (file names) are that key's business.
	if viewer, admin := jobViewer(c); !j.VisibleTo(viewer, admin) {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no job with id %q", id)
	}
	return c.JSON(http.StatusOK, j)
}

// unscheduleJob stops a scheduled job's schedule, for the key that
// started it or an admin key; any other key gets the answer of an
// unknown job.
func (s *Server) unscheduleJob(c *echo.Context) error {
	js, err := s.jobService()
	if err != nil {
		return err
	}
	id := c.Param("id")
	ctx := c.Request().Context()
	j, err := js.Get(ctx, id)
	if err != nil {
		return err
	}
	if viewer, admin := jobViewer(c); !j.VisibleTo(viewer, admin) {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no job with id %q", id)
	}
	if j, err = js.Unschedule(ctx, id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// jobViewer is who calls a job route: the key's id and whether it is an
// admin key. Without keys every caller is admin (the server is open).
func jobViewer(c *echo.Context) (string, bool) {
	p := principal(c)
	if p == nil {
		return "", true
	}
	return p.KeyID, p.Allows(auth.RouteAdmin)
}

// reindexRequest is POST /v1/reindex's optional body: repo narrows the
// traces counted as queued (the vector index is one index over every
// item, so its rebuild covers them all); regenerate_embeddings (default
// true) re-embeds every item into the vector index; graph rebuilds the
// Neo4j graph.
type reindexRequest struct {
	Repo                 string `json:"repo,omitempty"`
	RegenerateEmbeddings *bool  `json:"regenerate_embeddings,omitempty"`
	Graph                bool   `json:"graph,omitempty"`
}

// reindexResponse is the job and the commit traces it covers.
type reindexResponse struct {
	JobID        string `json:"job_id"`
	State        string `json:"state"`
	TracesQueued int    `json:"traces_queued"`
}

func (s *Server) startReindex(c *echo.Context) error {
	js, err := s.jobService()
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req reindexRequest
	if len(body) > 0 {
		if err := jsonstrict.Decode(body, &req, ""); err != nil {
			return err
		}
	}
	if req.Repo != "" {
		if err := trace.ValidRepo(req.Repo, "repo"); err != nil {
			return err
		}
	}
	embeddings := req.RegenerateEmbeddings == nil || *req.RegenerateEmbeddings
	if !embeddings && !req.Graph {
		return h4r.Errorf(h4r.EINVALID, "regenerate_embeddings", "nothing to reindex: regenerate_embeddings is false and graph is not set")
	}
	queued := 0
	if s.traces != nil {
		if queued, err = s.traces.CountTraces(c.Request().Context(), req.Repo); err != nil {
			return err
		}
	}
	owner, _ := jobViewer(c)
	j, err := js.StartReindex(c.Request().Context(), owner, req.Graph, embeddings)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, reindexResponse{JobID: j.ID, State: j.State, TracesQueued: queued})
}
