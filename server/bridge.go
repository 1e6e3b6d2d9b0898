package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/jobs"
)

// WithBridge serves the context bridge at POST /v1/bridge
// and takes trajectories at POST /v1/bridge/trajectories.
func WithBridge(b *bridge.Bridge) Option { return func(s *Server) { s.bridge = b } }

func (s *Server) bridgeRoutes() []route {
	return []route{
		{"POST", "/v1/bridge", s.bridgeEnrich, readRoute},
		{"POST", "/v1/bridge/trajectories", s.bridgeTrajectories, ingestRoute},
		{"POST", "/admin/backfill-signatures", s.backfillSignatures, adminRoute},
	}
}

// SignatureBackfiller starts the job that (re)computes the signatures of
// stored trajectories (app.Jobs).
type SignatureBackfiller interface {
	StartBackfillSignatures(ctx context.Context, owner string) (jobs.Job, error)
}

// backfillSignatures starts the backfill job and answers 202 with its id;
// GET /v1/jobs/{id} follows its progress. It takes no body.
func (s *Server) backfillSignatures(c *echo.Context) error {
	js, err := s.jobService()
	if err != nil {
		return err
	}
	bf, ok := js.(SignatureBackfiller)
	if !ok {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "this server's jobs cannot backfill signatures")
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var none struct{}
		if err := jsonstrict.Decode(body, &none, ""); err != nil {
			return err
		}
	}
	owner, _ := jobViewer(c)
	j, err := bf.StartBackfillSignatures(c.Request().Context(), owner)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]string{"job_id": j.ID, "state": j.State})
}

// bridgeBody is a tool call and, optionally, its result.
type bridgeBody struct {
	Tool   string          `json:"tool"`
	Params map[string]any  `json:"params"`
	Result json.RawMessage `json:"result,omitempty"`
}

// bridgeEnrich answers {result, context_bridge?}: the result as sent, and
// the trajectories similar to the call that the key may see. Without a
// bridge, or with it off, context_bridge is absent (the bridge contract's
// feature flag), never an error.
func (s *Server) bridgeEnrich(c *echo.Context) error {
	req, err := decodeBody[bridgeBody](s, c)
	if err != nil {
		return err
	}
	switch {
	case req.Tool == "":
		return h4r.Errorf(h4r.EINVALID, "tool", "tool is required")
	case len(req.Tool) > h4r.MaxIDBytes:
		return h4r.Errorf(h4r.EINVALID, "tool", "tool is longer than %d bytes", h4r.MaxIDBytes)
	case req.Params == nil:
		return h4r.Errorf(h4r.EINVALID, "params", "params is required (an object)")
	}
	var result any = req.Result
	if len(req.Result) == 0 {
		result = nil
	}
	if s.bridge == nil {
		return c.JSON(http.StatusOK, bridge.Response{Result: result})
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.bridge.Enrich(c.Request().Context(), spec, req.Tool, req.Params, result))
}

// bridgeTrajectories stores trajectories as items of kind trajectory.
func (s *Server) bridgeTrajectories(c *echo.Context) error {
	ts, err := readDecoded(s, c, bridge.DecodeTrajectories)
	if err != nil {
		return err
	}
	items := make([]h4r.Item, len(ts))
	for i, t := range ts {
		items[i] = t.Item()
	}
	ids, err := s.store.Upsert(c.Request().Context(), items)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"upserted": len(ids), "ids": ids})
}
