package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// readBody reads the whole body under the size limit. A body that has not
// arrived when the read deadline (WithReadTimeout) passes is
// request_timeout, not an internal error; a body cut off by the client
// closing the connection is cancelled.
func (s *Server) readBody(c *echo.Context) ([]byte, error) {
	r := http.MaxBytesReader(c.Response(), c.Request().Body, s.maxBodyBytes)
	b, err := io.ReadAll(r)
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return nil, h4r.Errorf(h4r.ETIMEOUT, "", "the request body did not arrive within %s: send it faster, or in smaller parts", s.readTimeout)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The connection ended before the body: the client closed
			// the request.
			return nil, fmt.Errorf("%w: reading the request body: %w", canceled(), err)
		}
		return nil, err
	}
	return b, nil
}

// decodeBody reads the request body and decodes it strictly into a T;
// errors name fields from the body's top ("query.type").
func decodeBody[T any](s *Server, c *echo.Context) (T, error) {
	return readDecoded(s, c, func(body []byte) (T, error) {
		var v T
		err := s.bodies.Decode(body, &v, "")
		return v, err
	})
}

// readDecoded reads the request body and decodes it with decode, a
// package's own decoder of its wire format (trace.Decode, rag.DecodeQuery).
func readDecoded[T any](s *Server, c *echo.Context, decode func([]byte) (T, error)) (T, error) {
	body, err := s.readBody(c)
	if err != nil {
		var zero T
		return zero, err
	}
	return decode(body)
}

// answerCall is the shape of a route that acts for the caller: decode the
// body into an In, call with the caller's specialist, answer 200 with the
// result.
func answerCall[In, Out any](s *Server, c *echo.Context, call func(context.Context, h4r.Specialist, In) (Out, error)) error {
	in, err := decodeBody[In](s, c)
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	out, err := call(c.Request().Context(), spec, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// specialist validates a claimed specialist (from a body or meta.from) and
// fills defaults. Until authentication exists, the claim is the identity; a
// request that names none is the anonymous public specialist.
func specialist(d *jsonstrict.Decoder, field string, raw json.RawMessage) (h4r.Specialist, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return h4r.Anonymous(), nil
	}
	var spec h4r.Specialist
	if err := d.Decode(raw, &spec, field); err != nil {
		return spec, err
	}
	if strings.TrimSpace(spec.ID) == "" {
		return spec, h4r.Errorf(h4r.EINVALID, field+".id", "specialist id is required")
	}
	if err := spec.CheckGroups(field); err != nil {
		return spec, err
	}
	if spec.Type == "" {
		spec.Type = "specialist"
	}
	if spec.AuthorizedGroups == nil {
		spec.AuthorizedGroups = []string{}
	}
	return spec, nil
}

// contextPackBody is the body of POST /v1/context-pack: a ContextRequest
// whose specialist is decoded separately so errors can name its fields.
type contextPackBody struct {
	h4r.ContextRequest
	Specialist json.RawMessage `json:"specialist,omitempty"`
}

func (s *Server) contextPack(c *echo.Context) error {
	req, err := decodeBody[contextPackBody](s, c)
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "specialist", req.Specialist)
	if err != nil {
		return err
	}
	req.Specialist = nil // the identity, narrowed: spec
	plan, err := req.Plan("")
	if err != nil {
		return err
	}
	p, err := s.pack(c, spec, plan)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// pack builds the pack of a planned request within the request deadline.
// The engine admits it (its pack slots are the one admission point); a
// request that prefers "busy=503" gets the engine's unavailable error,
// which writeError answers with Retry-After.
func (s *Server) pack(c *echo.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.requestTimeout)
	defer cancel()
	plan.Audit = s.mayAudit(c)
	plan.BusyError = prefersBusy503(c.Request()) // prefer.go
	p, err := s.engine.Run(ctx, spec, plan)
	if err != nil && plan.BusyError && h4r.ErrorCode(err) == h4r.EUNAVAILABLE {
		c.Response().Header().Set(preferAppliedHd, preferBusy+"="+preferBusy503)
		return nil, err
	}
	if err != nil && ctx.Err() != nil && c.Request().Context().Err() == nil && h4r.ErrorCode(err) == h4r.EINTERNAL {
		// The engine degrades a pack itself when the deadline expires; this
		// is for a stage that fails on the deadline anyway: the agent still
		// gets a pack that says what is missing, never an error page.
		s.log.WarnContext(ctx, "the request deadline expired and the engine failed", "error", err)
		p, err = emptyPack(spec, fmt.Sprintf("the request deadline (%s) expired before any candidates, ranking or policy decisions were made: the pack is empty; retry, or ask with a smaller limit or budget", s.requestTimeout)), nil
	}
	if err != nil {
		return nil, err
	}
	if clientClosed(c) {
		// The engine degrades a pack whose context ended; this one's
		// client is gone, so nobody reads it, and it is no delivered
		// pack: the access log records 499, not 200.
		return nil, canceled()
	}
	p.RequestID = requestID(c)
	s.metrics.ObservePack(p)
	return p, nil
}

// emptyPack is an empty degraded pack whose one warning says why.
func emptyPack(spec h4r.Specialist, warning string) *h4r.Pack {
	return &h4r.Pack{
		Status:      h4r.StatusDegraded,
		Results:     []h4r.Result{},
		Sources:     map[string]h4r.SourceStats{},
		SourceNames: []string{},
		AgentSlice: h4r.AgentSlice{
			SpecialistID: spec.ID, SecurityLevel: spec.SecurityLevel.String(), ItemIDs: []string{}, Actions: []string{},
		},
		Explainability: h4r.Explainability{
			TLDR:        h4r.TLDR{Sentences: []h4r.Sentence{}, Citations: []string{}},
			Affordances: []h4r.Affordance{},
			Items:       []h4r.ItemExplanation{},
			Warnings:    []string{warning},
		},
	}
}

// envelopeIn is an incoming A2A envelope; from and payload stay raw so that
// their errors name their own fields.
type envelopeIn struct {
	Meta struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		From      json.RawMessage `json:"from"`
		ReplyTo   string          `json:"reply_to"`
		Timestamp string          `json:"timestamp"`
	} `json:"meta"`
	Payload json.RawMessage `json:"payload"`
}

// a2a answers a ContextRequest envelope with a ContextResult, or with a
// ContextError envelope (and the error's HTTP status) when it cannot.
func (s *Server) a2a(c *echo.Context) error {
	var in envelopeIn
	p, err := s.a2aPack(c, &in)
	replyTo := in.Meta.ID
	if len(replyTo) > h4r.MaxIDBytes {
		replyTo = "" // refused below its cap; not echoed
	}
	if err != nil {
		return s.writeError(c, err, replyTo)
	}
	meta := h4r.EnvelopeMeta{ID: requestID(c), Type: h4r.TypeContextResult, ReplyTo: replyTo, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	payload, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding context result: %w", err)
	}
	return c.JSON(http.StatusOK, h4r.Envelope{Meta: meta, Payload: payload})
}

func (s *Server) a2aPack(c *echo.Context, in *envelopeIn) (*h4r.Pack, error) {
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	if err := s.bodies.Decode(body, in, ""); err != nil {
		// The strict walk refuses before filling anything; the error reply
		// still names the request it answers when meta.id can be read.
		_ = json.Unmarshal(body, in)
		return nil, err
	}
	if in.Meta.ID == "" {
		// The context-pack contract's request example has no meta.id: the message is
		// named here, and the reply's reply_to tells the sender its name.
		in.Meta.ID = newMessageID()
	}
	switch {
	case strings.TrimSpace(in.Meta.ID) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "meta.id", "message id must not be blank (leave it out to have one generated)")
	case len(in.Meta.ID) > h4r.MaxIDBytes:
		return nil, h4r.Errorf(h4r.EINVALID, "meta.id", "message id is longer than %d bytes", h4r.MaxIDBytes)
	case in.Meta.Type != h4r.TypeContextRequest:
		return nil, h4r.Errorf(h4r.EINVALID, "meta.type", "message type must be %q, got %q", h4r.TypeContextRequest, in.Meta.Type)
	case len(in.Payload) == 0 || string(in.Payload) == "null":
		return nil, h4r.Errorf(h4r.EINVALID, "payload", "payload is required")
	}
	spec, err := s.identity(c, "meta.from", in.Meta.From)
	if err != nil {
		return nil, err
	}
	// A specialist in the payload, valid or not and in any case, is refused
	// for where it is, before the strict decode would judge its content.
	var probe struct {
		Specialist json.RawMessage `json:"specialist"`
	}
	if json.Unmarshal(in.Payload, &probe) == nil && len(probe.Specialist) > 0 && string(probe.Specialist) != "null" {
		return nil, h4r.Errorf(h4r.EINVALID, "payload.specialist", "in an envelope the specialist is meta.from")
	}
	var req h4r.ContextRequest
	if err := s.bodies.Decode(in.Payload, &req, "payload"); err != nil {
		return nil, err
	}
	if req.Specialist != nil {
		return nil, h4r.Errorf(h4r.EINVALID, "payload.specialist", "in an envelope the specialist is meta.from")
	}
	plan, err := req.Plan("payload")
	if err != nil {
		return nil, err
	}
	return s.pack(c, spec, plan)
}

// newMessageID names an envelope that came without meta.id.
func newMessageID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "msg-" + hex.EncodeToString(b[:])
}

// upsertResponse answers POST /v1/items.
type upsertResponse struct {
	Upserted int      `json:"upserted"`
	IDs      []string `json:"ids"`
}

// upsertItems takes one item or {"items": [...]}; a batch is written whole
// or not at all.
func (s *Server) upsertItems(c *echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	items, batch, err := decodeItems(body)
	if err != nil {
		return err
	}
	ids, err := s.store.Upsert(c.Request().Context(), items)
	if err != nil {
		if !batch {
			err = unbatched(err)
		}
		return err
	}
	s.ingested(c.Request().Context(), ids) // ambient precedents (subscribe.go)
	return c.JSON(http.StatusOK, upsertResponse{Upserted: len(ids), IDs: ids})
}

// MaxBatchItems is the most items one POST /v1/items may carry: a batch is
// one transaction, and a bounded one keeps the store's write lock short.
const MaxBatchItems = 1000

// DecodeItems decodes the body of POST /v1/items: one item object, or
// {"items": [ … ]}. Each item is decoded strictly and validated; errors name
// the field ("items[2].metadata.trust", or "metadata.trust" for one item).
func DecodeItems(body []byte) ([]h4r.Item, error) {
	items, _, err := decodeItems(body)
	return items, err
}

// unbatched renames the field of a store's error about a single item: the
// store names the items of a write "items[i]", a single item's fields are
// named without it.
func unbatched(err error) error {
	herr, ok := errors.AsType[*h4r.Error](err)
	if !ok {
		return err
	}
	const prefix = "items[0]"
	field, found := strings.CutPrefix(herr.Field, prefix)
	if !found || (field != "" && field[0] != '.') {
		return err
	}
	return &h4r.Error{Code: herr.Code, Message: herr.Message, Field: strings.TrimPrefix(field, ".")}
}

// decodeItems is DecodeItems, also saying whether the body was a batch.
func decodeItems(body []byte) ([]h4r.Item, bool, error) {
	var probe map[string]json.RawMessage
	if err := jsonstrict.Decode(body, &probe, ""); err != nil {
		return nil, false, err
	}
	raw, isBatch := probe["items"]
	if !isBatch {
		var it h4r.Item
		if err := jsonstrict.Decode(body, &it, ""); err != nil {
			return nil, false, err
		}
		if err := it.Validate(""); err != nil {
			return nil, false, err
		}
		return []h4r.Item{it}, false, nil
	}
	if len(probe) != 1 {
		keys := make([]string, 0, len(probe))
		for k := range probe {
			if k != "items" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return nil, true, h4r.Errorf(h4r.EINVALID, keys[0], "a batch is {\"items\": [...]} with no other keys, got %q", keys[0])
	}
	var rawItems []json.RawMessage
	if err := jsonstrict.Decode(raw, &rawItems, "items"); err != nil {
		return nil, true, err
	}
	if len(rawItems) == 0 {
		return nil, true, h4r.Errorf(h4r.EINVALID, "items", "the batch is empty")
	}
	if len(rawItems) > MaxBatchItems {
		return nil, true, h4r.Errorf(h4r.EINVALID, "items", "a batch holds at most %d items, got %d: split it (it is written in one transaction)", MaxBatchItems, len(rawItems))
	}
	items := make([]h4r.Item, len(rawItems))
	for i, r := range rawItems {
		field := fmt.Sprintf("items[%d]", i)
		if err := jsonstrict.Decode(bytes.TrimSpace(r), &items[i], field); err != nil {
			return nil, true, err
		}
		if err := items[i].Validate(field); err != nil {
			return nil, true, err
		}
	}
	return items, true, nil
}

// itemID returns the {id} path parameter, unescaped. echo matches routes on
// the escaped path when it differs from the default encoding (an id holding
// "/" arrives as %2F) and then leaves the parameter escaped; otherwise the
// parameter is already unescaped and must not be unescaped twice.
func itemID(c *echo.Context) (string, error) {
	id := c.Param("id")
	if c.Request().URL.RawPath == "" {
		return id, nil
	}
	unescaped, err := url.PathUnescape(id)
	if err != nil {
		return "", h4r.Errorf(h4r.EINVALID, "id", "the item id in the path is not validly escaped")
	}
	return unescaped, nil
}

// accessRecorder counts an access to items (the store): an explicit read
// is a use, which the frequency signal measures.
type accessRecorder interface{ RecordAccess(ids []string) }

func (s *Server) getItem(c *echo.Context) error {
	id, err := itemID(c)
	if err != nil {
		return err
	}
	it, err := s.store.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if r, ok := s.store.(accessRecorder); ok {
		r.RecordAccess([]string{id}) // an explicit read is a use (frequency)
	}
	return c.JSON(http.StatusOK, it)
}

func (s *Server) deleteItem(c *echo.Context) error {
	id, err := itemID(c)
	if err != nil {
		return err
	}
	if err := s.store.Delete(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
