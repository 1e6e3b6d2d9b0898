package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// The open Agent2Agent protocol (a2a-go SDK), beside DESIGN.md's own
// envelopes at /v1/a2a: an agent card at the well-known path, and
// JSON-RPC message/send at a2aRPCPath answered with the pack as a data
// artifact of a completed task.
const (
	a2aRPCPath = "/v1/a2a/rpc"
	// a2aProtocolVersion is the protocol version the SDK (v0.3) speaks.
	a2aProtocolVersion = "0.3.0"
	// a2aBearerScheme names the card's security scheme: the API keys.
	a2aBearerScheme a2a.SecuritySchemeName = "bearer"
	// a2aArtifactName names the artifact that carries the pack.
	a2aArtifactName = "context_pack"
)

// a2aProtoRoutes: the card is public, as the protocol has clients read it
// before they authenticate (it says how to); message/send is a read.
func (s *Server) a2aProtoRoutes() []route {
	rpc := a2asrv.NewJSONRPCHandler(checkedA2AHandler{a2asrv.NewHandler(packExecutor{s}, a2asrv.WithLogger(s.log))})
	return []route{
		{"GET", a2asrv.WellKnownAgentCardPath, s.agentCard, public},
		{"POST", a2aRPCPath, func(c *echo.Context) error { return s.a2aRPC(c, rpc) }, readRoute},
	}
}

// a2aCaller is what the executor needs of the HTTP request: who calls
// (the key's specialist) and whether it may audit.
type a2aCaller struct {
	spec  h4r.Specialist
	audit bool
}

type a2aCallerKey struct{}

// a2aRPC hands the request to the SDK's JSON-RPC handler with the caller's
// specialist in its context (the executor runs in its own goroutine, on a
// context that keeps the request's values).
func (s *Server) a2aRPC(c *echo.Context, rpc http.Handler) error {
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	ctx := context.WithValue(c.Request().Context(), a2aCallerKey{}, a2aCaller{spec: spec, audit: s.mayAudit(c)})
	req := c.Request().WithContext(ctx)
	req.Body = http.MaxBytesReader(c.Response(), req.Body, s.maxBodyBytes)
	// The SDK writes JSON-RPC answers without a Content-Type, which
	// net/http would sniff as text/plain; a stream sets its own.
	c.Response().Header().Set("Content-Type", "application/json")
	rpc.ServeHTTP(c.Response(), req)
	return nil
}

// agentCard describes this server as an A2A agent. Its URL is built from
// the request's own scheme and host, as the client reached it. With API
// keys the card declares the bearer scheme and requires it.
func (s *Server) agentCard(c *echo.Context) error {
	base := c.Scheme() + "://" + c.Request().Host
	card := &a2a.AgentCard{
		Name:               "H4R context engine",
		Description:        "Builds context packs for agents: ranked, policy-sliced, budgeted evidence with citations and explanations.",
		URL:                base + a2aRPCPath,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    a2aProtocolVersion,
		Version:            "1",
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"application/json"},
		Capabilities:       a2a.AgentCapabilities{},
		Skills: []a2a.AgentSkill{{
			ID:   "context_pack",
			Name: "Context pack",
			Description: "Send the query as a text part, or a ContextRequest (DESIGN.md: query{type, text, filters}, limit, budget, anchors…) as a data part; " +
				"the answer is a completed task whose artifact context_pack holds the pack as data. Clearance comes from the API key.",
			Tags:        []string{"retrieval", "context", "memory"},
			Examples:    []string{"login test failures with selector issues"},
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"application/json"},
		}},
	}
	if s.keys != nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{
			a2aBearerScheme: a2a.HTTPAuthSecurityScheme{Scheme: "bearer", Description: "an H4R API key (H4R_API_KEYS_FILE); the key's principal is the specialist"},
		}
		card.Security = []a2a.SecurityRequirements{{a2aBearerScheme: a2a.SecuritySchemeScopes{}}}
	}
	return c.JSON(http.StatusOK, card)
}

// checkedA2AHandler refuses a message it cannot answer as a protocol
// error (JSON-RPC invalid params, with the reason) before a task is made.
type checkedA2AHandler struct{ a2asrv.RequestHandler }

func (h checkedA2AHandler) OnSendMessage(ctx context.Context, params *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if _, err := a2aRequest(params.Message); err != nil {
		return nil, err
	}
	return h.RequestHandler.OnSendMessage(ctx, params)
}

func (h checkedA2AHandler) OnSendMessageStream(ctx context.Context, params *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	if _, err := a2aRequest(params.Message); err != nil {
		return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
	}
	return h.RequestHandler.OnSendMessageStream(ctx, params)
}

// a2aRequest reads the ContextRequest a message carries: the first data
// part, decoded strictly (errors name "data.…"), or else the message's
// text parts joined as a query of the default type. It returns the request planned, or
// an error wrapping a2a.ErrInvalidParams with what is wrong.
func a2aRequest(msg *a2a.Message) (*h4r.Plan, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
	}
	if msg == nil {
		return nil, invalid("message is required")
	}
	var texts []string
	for i, p := range msg.Parts {
		switch p := p.(type) {
		case a2a.DataPart:
			raw, err := json.Marshal(p.Data)
			if err != nil {
				return nil, invalid("parts[%d]: the data part cannot be encoded: %v", i, err)
			}
			var probe struct {
				Specialist json.RawMessage `json:"specialist"`
			}
			if json.Unmarshal(raw, &probe) == nil && len(probe.Specialist) > 0 && string(probe.Specialist) != "null" {
				return nil, invalid("parts[%d].data.specialist: the specialist comes from the API key, not the message", i)
			}
			var req h4r.ContextRequest
			if err := jsonstrict.Decode(raw, &req, fmt.Sprintf("parts[%d].data", i)); err != nil {
				return nil, invalid("%v", err)
			}
			plan, err := req.Plan(fmt.Sprintf("parts[%d].data", i))
			if err != nil {
				return nil, invalid("%v", err)
			}
			return plan, nil
		case a2a.TextPart:
			if t := strings.TrimSpace(p.Text); t != "" {
				texts = append(texts, t)
			}
		}
	}
	if len(texts) == 0 {
		return nil, invalid("the message has no text part and no data part: send the query as a text part, or a ContextRequest ({\"query\": {\"text\": …}}) as a data part")
	}
	req := h4r.ContextRequest{Query: h4r.Query{Text: strings.Join(texts, "\n")}}
	plan, err := req.Plan("parts")
	if err != nil {
		return nil, invalid("%v", err)
	}
	return plan, nil
}

// packExecutor answers a message with a task: submitted, then the pack as
// a data artifact, then completed; or failed with the error's message.
type packExecutor struct{ s *Server }

func (e packExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateSubmitted, nil)); err != nil {
			return fmt.Errorf("writing the submitted state: %w", err)
		}
	}
	pack, err := e.pack(ctx, reqCtx.Message)
	if err != nil {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, reqCtx, a2a.TextPart{Text: h4r.ErrorCode(err) + ": " + h4r.ErrorMessage(err)})
		ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateFailed, msg)
		ev.Final = true
		if h4r.ErrorCode(err) == h4r.EINTERNAL {
			e.s.log.ErrorContext(ctx, "a2a message/send failed", "error", err)
		}
		return q.Write(ctx, ev)
	}
	art := a2a.NewArtifactEvent(reqCtx, a2a.DataPart{Data: pack})
	art.Artifact.Name = a2aArtifactName
	art.Artifact.Description = "the context pack (the body POST /v1/context-pack answers)"
	if err := q.Write(ctx, art); err != nil {
		return fmt.Errorf("writing the pack artifact: %w", err)
	}
	done := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCompleted, nil)
	done.Final = true
	return q.Write(ctx, done)
}

func (packExecutor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// pack builds the pack for the caller in ctx, within the request deadline
// and a pack slot, as the other pack routes do, and returns it as the
// JSON object a data part holds.
func (e packExecutor) pack(ctx context.Context, msg *a2a.Message) (map[string]any, error) {
	caller, ok := ctx.Value(a2aCallerKey{}).(a2aCaller)
	if !ok {
		return nil, errors.New("a2a: no caller in the request context")
	}
	plan, err := a2aRequest(msg)
	if err != nil {
		return nil, h4r.Errorf(h4r.EINVALID, "", "%v", err)
	}
	plan.Audit = caller.audit
	ctx, cancel := context.WithTimeout(ctx, e.s.requestTimeout)
	defer cancel()
	if e.s.slots != nil {
		select {
		case e.s.slots <- struct{}{}:
			e.s.metrics.PackStarted()
			defer func() { <-e.s.slots; e.s.metrics.PackDone() }()
		case <-ctx.Done():
			return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the server was busy: no pack slot within the request deadline (%s)", e.s.requestTimeout)
		}
	}
	p, err := e.s.engine.Run(ctx, caller.spec, plan)
	if err != nil {
		return nil, err
	}
	e.s.metrics.ObservePack(p)
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the pack: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding the pack as data: %w", err)
	}
	return out, nil
}
