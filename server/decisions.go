package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/scs"
)

// DecisionService records decision traces and events and answers the
// precedent queries (decision.Service).
type DecisionService interface {
	RecordTraces(ctx context.Context, traces []decision.Trace, batchField string, single bool) ([]string, error)
	RecordEvents(ctx context.Context, events []decision.Event, batchField string, single bool) ([]string, error)
	Preset(ctx context.Context, spec h4r.Specialist, q decision.PresetQuery) (*decision.Answer, error)
	Get(ctx context.Context, spec h4r.Specialist, id string) (*decision.WithContext, error)
	Prefetch(ctx context.Context, spec h4r.Specialist, req decision.PrefetchRequest) (*decision.PrefetchResult, error)
	Escalation(ctx context.Context, spec h4r.Specialist, req decision.EscalationRequest) (*decision.EscalationHint, error)
	// Visible is item id as spec may see it: not_found, alike, when it
	// does not exist or spec may not see it.
	Visible(ctx context.Context, spec h4r.Specialist, id string) (scs.Cleared, error)
	// VisibleLinks drops the links to items spec may not see.
	VisibleLinks(ctx context.Context, spec h4r.Specialist, links []h4r.Link) []h4r.Link
}

// WithDecisions serves decision traces, events and precedent queries
// (server/decisions.go) over d.
func WithDecisions(d DecisionService) Option { return func(s *Server) { s.decisions = d } }

// decisionRoutes are the decision-trace routes; without WithDecisions
// they answer unavailable.
func (s *Server) decisionRoutes() []route {
	return []route{
		{"POST", "/v1/decision-traces", s.recordTraces, ingestRoute},
		{"GET", "/v1/decision-traces", s.queryTraces, readRoute},
		{"GET", "/v1/decision-traces/:id", s.getDecisionTrace, readRoute},
		{"POST", "/v1/events", s.recordEvents, ingestRoute},
		{"POST", "/v1/items/:id/links", s.addLinks, ingestRoute},
		{"DELETE", "/v1/items/:id/links", s.removeLinks, ingestRoute},
		{"POST", "/v1/prefetch", s.prefetch, readRoute},
		{"POST", "/v1/escalation", s.escalation, readRoute},
		{"GET", "/v1/subscribe", s.subscribe, readRoute},
	}
}

func (s *Server) decisionService() (DecisionService, error) {
	if s.decisions == nil {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "decision traces are not configured on this server")
	}
	return s.decisions, nil
}

// recordedResponse answers the ingest of traces and events.
type recordedResponse struct {
	Recorded int      `json:"recorded"`
	IDs      []string `json:"ids"`
}

// decodeOneOrBatch decodes one object, or {"<key>": [...]}, strictly.
func decodeOneOrBatch[T any](body []byte, key string) (list []T, single bool, err error) {
	var probe map[string]json.RawMessage
	if err := jsonstrict.Decode(body, &probe, ""); err != nil {
		return nil, false, err
	}
	raw, isBatch := probe[key]
	if !isBatch {
		var one T
		if err := jsonstrict.Decode(body, &one, ""); err != nil {
			return nil, true, err
		}
		return []T{one}, true, nil
	}
	if len(probe) != 1 {
		return nil, false, h4r.Errorf(h4r.EINVALID, "", "a batch is {%q: [...]} with no other keys", key)
	}
	var raws []json.RawMessage
	if err := jsonstrict.Decode(raw, &raws, key); err != nil {
		return nil, false, err
	}
	if len(raws) == 0 || len(raws) > MaxBatchItems {
		return nil, false, h4r.Errorf(h4r.EINVALID, key, "a batch holds 1 to %d entries, got %d", MaxBatchItems, len(raws))
	}
	list = make([]T, len(raws))
	for i, r := range raws {
		if err := jsonstrict.Decode(bytes.TrimSpace(r), &list[i], fmt.Sprintf("%s[%d]", key, i)); err != nil {
			return nil, false, err
		}
	}
	return list, false, nil
}

// recordTraces takes one decision trace or {"decision_traces": [...]}.
// Sessions subscribed to ambient precedents hear of the recorded traces.
func (s *Server) recordTraces(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	ids, err := recordOneOrBatch(s, c, "decision_traces", d.RecordTraces)
	if err != nil {
		return err
	}
	s.ingested(c.Request().Context(), ids)
	return c.JSON(http.StatusOK, recordedResponse{Recorded: len(ids), IDs: ids})
}

// recordEvents takes one event or {"events": [...]}.
func (s *Server) recordEvents(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	ids, err := recordOneOrBatch(s, c, "events", d.RecordEvents)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, recordedResponse{Recorded: len(ids), IDs: ids})
}

// recordOneOrBatch decodes one T or {key: [...]} and records it; the
// store's errors about a single record name its fields without the
// "items[0]" prefix (unbatched).
func recordOneOrBatch[T any](s *Server, c *echo.Context, key string, record func(context.Context, []T, string, bool) ([]string, error)) ([]string, error) {
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	list, single, err := decodeOneOrBatch[T](body, key)
	if err != nil {
		return nil, err
	}
	ids, err := record(c.Request().Context(), list, key, single)
	if err != nil && single {
		err = unbatched(err)
	}
	return ids, err
}

// Limits of GET /v1/decision-traces.
const (
	maxDecisionQueryLimit     = 1000
	defaultDecisionQueryLimit = 50
)

// queryTraces answers GET /v1/decision-traces?preset=…: decisions citing
// a precedent (epic= or decision=), applying a pattern (pattern=), the
// assignment history of a file (file=), the rejected reviews, or the
// decisions of an epic (epic=), the review decisions (status= narrows
// them). limit= caps the answer.
func (s *Server) queryTraces(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	q := c.Request().URL.Query()
	for k := range q {
		switch k {
		case "preset", "epic", "decision", "pattern", "file", "status", "limit":
		default:
			return h4r.Errorf(h4r.EINVALID, k, "unknown parameter %q (want preset, epic, decision, pattern, file, status, limit)", k)
		}
	}
	pq := decision.PresetQuery{Preset: q.Get("preset"), Epic: q.Get("epic"), Decision: q.Get("decision"),
		Pattern: q.Get("pattern"), File: q.Get("file"), Status: q.Get("status"), Limit: defaultDecisionQueryLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDecisionQueryLimit {
			return h4r.Errorf(h4r.EINVALID, "limit", "limit must be an integer from 1 to %d, got %q", maxDecisionQueryLimit, v)
		}
		pq.Limit = n
	}
	ans, err := d.Preset(c.Request().Context(), spec, pq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ans)
}

// getDecisionTrace answers one decision with its links and outcome.
func (s *Server) getDecisionTrace(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	id, err := itemID(c)
	if err != nil {
		return err
	}
	wc, err := d.Get(c.Request().Context(), spec, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wc)
}

// prefetch answers POST /v1/prefetch (the commit-trace contract): relevant commit
// traces for a starting session, a summary and suggestions.
func (s *Server) prefetch(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	return answerCall(s, c, d.Prefetch)
}

// escalation answers POST /v1/escalation (the commit-trace contract): whether to
// escalate, from the outcomes of similar traces.
func (s *Server) escalation(c *echo.Context) error {
	d, err := s.decisionService()
	if err != nil {
		return err
	}
	return answerCall(s, c, d.Escalation)
}
