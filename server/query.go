package server

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rag"
)

// WithRAG serves the retrieval contract's POST /query and POST /feedback over svc
// (packs stored with their ids, feedback as labels and uses).
func WithRAG(svc *rag.Service) Option { return func(s *Server) { s.rag = svc } }

// ragRoutes are the retrieval contract's paths, kept as the document names them.
// Feedback is a read key's: the agent that was given a pack judges it, and
// only its own packs (rag.Service.Feedback).
func (s *Server) ragRoutes() []route {
	return []route{
		{"POST", "/query", s.ragQuery, readRoute},
		{"POST", "/feedback", s.ragFeedback, readRoute},
	}
}

func (s *Server) ragService() (*rag.Service, error) {
	if s.rag == nil {
		return nil, h4r.Errorf(h4r.ENOTFOUND, "", "this server was started without a pack store: /query and /feedback are not served")
	}
	return s.rag, nil
}

// ragQuery builds a pack like POST /v1/context-pack (same deadline, slots
// and policy; clearance from the key) and answers it in the retrieval contract's
// shape, stored under its id.
func (s *Server) ragQuery(c *echo.Context) error {
	svc, err := s.ragService()
	if err != nil {
		return err
	}
	req, err := readDecoded(s, c, rag.DecodeQuery)
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	plan, err := req.Plan()
	if err != nil {
		return err
	}
	p, err := s.pack(c, spec, plan)
	if err != nil {
		return err
	}
	resp, err := svc.Deliver(c.Request().Context(), spec, req, plan, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// ragFeedback records a verdict on one of the caller's packs.
func (s *Server) ragFeedback(c *echo.Context) error {
	svc, err := s.ragService()
	if err != nil {
		return err
	}
	req, err := readDecoded(s, c, rag.DecodeFeedback)
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	if err := svc.Feedback(c.Request().Context(), spec, req); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"ok": true})
}
