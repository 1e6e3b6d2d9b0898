package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// The open Agent2Agent protocol, beside the item contract's own envelopes at
// /v1/a2a: an agent card at the well-known path, and JSON-RPC at
// a2aRPCPath in two versions of the protocol. 1.0 (methods SendMessage,
// GetTask…, the A2A-Version: 1.0 header) is what current SDKs speak; 0.3
// (message/send, tasks/get…) is kept for older clients. Both answer a
// message with a task whose artifact holds the pack, from one task store.
const (
	a2aRPCPath      = "/v1/a2a/rpc"
	a2aCardPath     = "/.well-known/agent-card.json"
	a2aVersionHdr   = "A2A-Version"
	a2aV1           = "1.0"
	a2aV03          = "0.3"
	a2aV03Card      = "0.3.0"
	a2aBearerScheme = "bearer"
	// a2aArtifactName names the artifact that carries the pack.
	a2aArtifactName = "context_pack"
)

// errVersionNotSupported answers an A2A-Version this server does not speak.
var errVersionNotSupported = errors.New("version not supported")

// a2aService serves the card and the JSON-RPC endpoint over one task store.
type a2aService struct {
	s     *Server
	opts  A2AOptions
	tasks *a2aTaskStore
}

// a2aProtoRoutes: the card is public, as the protocol has clients read it
// before they authenticate (it says how to); the RPC methods are reads.
func (s *Server) a2aProtoRoutes() []route {
	a := &a2aService{s: s, opts: s.a2aOpts.withDefaults()}
	a.tasks = newA2ATaskStore(a.opts, time.Now)
	return []route{
		{"GET", a2aCardPath, a.card, public},
		{"POST", a2aRPCPath, a.rpc, readRoute},
	}
}

// a2aCaller is who calls: the key's specialist, whether it may audit, and
// the owner its tasks are kept under.
type a2aCaller struct {
	spec  h4r.Specialist
	audit bool
	owner string
}

// callerOf identifies the caller of c. Tasks belong to the API key (and
// its principal); without keys there is one anonymous loopback caller.
func (a *a2aService) callerOf(c *echo.Context) (a2aCaller, error) {
	spec, err := a.s.identity(c, "", nil)
	if err != nil {
		return a2aCaller{}, err
	}
	owner := "anonymous"
	if p := principal(c); p != nil {
		owner = "key:" + p.KeyID + "/" + spec.ID
	}
	return a2aCaller{spec: spec, audit: a.s.mayAudit(c), owner: owner}, nil
}

// baseURL is where clients reach this server: the configured public URL,
// or else the local address the connection came in on. Request headers
// (Host, X-Forwarded-*) never choose it: a card is cached and shared, and
// a client must not be sent elsewhere by what another client wrote.
func (a *a2aService) baseURL(r *http.Request) string {
	if a.opts.PublicURL != "" {
		return strings.TrimRight(a.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return scheme + "://" + addr.String()
	}
	return scheme + "://127.0.0.1"
}

// a2aWantsV1 reports whether the A2A-Version a request names is 1.x.
// Without the header a client speaks 0.3, as the 1.0 specification says.
func a2aWantsV1(r *http.Request) bool {
	major, _, _ := strings.Cut(strings.TrimSpace(r.Header.Get(a2aVersionHdr)), ".")
	return major == "1"
}

// card describes this server as an A2A agent. A client that asks for 1.0
// (A2A-Version: 1.0) gets the 1.0 card; any other gets the 0.3 card, which
// also lists the 1.0 interface (supportedInterfaces) for 1.0 clients that
// do not send the header. Both interfaces are the one RPC URL.
func (a *a2aService) card(c *echo.Context) error {
	base := a.baseURL(c.Request())
	c.Response().Header().Add("Vary", a2aVersionHdr)
	if a2aWantsV1(c.Request()) {
		return c.JSON(http.StatusOK, a.v1Card(base))
	}
	return c.JSON(http.StatusOK, a.legacyCard(base))
}

const (
	a2aCardName        = "H4R context engine"
	a2aCardDescription = "Builds context packs for agents: ranked, policy-sliced, budgeted evidence with citations and explanations."
	a2aSkillName       = "Context pack"
	a2aSkillText       = "Send the query as a text part, or a ContextRequest (docs/concepts.md: query{type, text, filters}, limit, budget, anchors…) as a data part; " +
		"the answer is a completed task whose artifact context_pack holds the pack as data. Clearance comes from the API key."
	a2aBearerText = "an H4R API key (H4R_API_KEYS_FILE); the key's principal is the specialist"
)

var (
	a2aInputModes  = []string{"text/plain", "application/json"}
	a2aOutputModes = []string{"application/json"}
	a2aSkillTags   = []string{"retrieval", "context", "memory"}
	a2aExamples    = []string{"login test failures with selector issues"}
)

func (a *a2aService) interfaces(base string) []v1Interface {
	return []v1Interface{
		{URL: base + a2aRPCPath, ProtocolBinding: string(a2a.TransportProtocolJSONRPC), ProtocolVersion: a2aV1},
		{URL: base + a2aRPCPath, ProtocolBinding: string(a2a.TransportProtocolJSONRPC), ProtocolVersion: a2aV03},
	}
}

// legacyCard is the 0.3 card with the interfaces of 1.0 beside it.
type legacyCard struct {
	*a2a.AgentCard
	SupportedInterfaces []v1Interface `json:"supportedInterfaces"`
}

func (a *a2aService) legacyCard(base string) legacyCard {
	card := &a2a.AgentCard{
		Name:               a2aCardName,
		Description:        a2aCardDescription,
		URL:                base + a2aRPCPath,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    a2aV03Card,
		Version:            "1",
		DefaultInputModes:  a2aInputModes,
		DefaultOutputModes: a2aOutputModes,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		Skills: []a2a.AgentSkill{{
			ID: a2aArtifactName, Name: a2aSkillName, Description: a2aSkillText,
			Tags: a2aSkillTags, Examples: a2aExamples, InputModes: a2aInputModes, OutputModes: a2aOutputModes,
		}},
	}
	if a.s.keys != nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{
			a2aBearerScheme: a2a.HTTPAuthSecurityScheme{Scheme: "bearer", Description: a2aBearerText},
		}
		card.Security = []a2a.SecurityRequirements{{a2aBearerScheme: a2a.SecuritySchemeScopes{}}}
	}
	return legacyCard{AgentCard: card, SupportedInterfaces: a.interfaces(base)}
}

func (a *a2aService) v1Card(base string) v1Card {
	card := v1Card{
		Name:                a2aCardName,
		Description:         a2aCardDescription,
		SupportedInterfaces: a.interfaces(base),
		Version:             "1",
		Capabilities:        v1Capabilities{Streaming: true, PushNotifications: false, ExtendedAgentCard: false},
		DefaultInputModes:   a2aInputModes,
		DefaultOutputModes:  a2aOutputModes,
		Skills: []v1Skill{{
			ID: a2aArtifactName, Name: a2aSkillName, Description: a2aSkillText,
			Tags: a2aSkillTags, Examples: a2aExamples, InputModes: a2aInputModes, OutputModes: a2aOutputModes,
		}},
	}
	if a.s.keys != nil {
		card.SecuritySchemes = map[string]v1SecurityScheme{
			a2aBearerScheme: {HTTPAuth: &v1HTTPAuth{Scheme: "Bearer", Description: a2aBearerText}},
		}
		card.SecurityRequirements = []v1SecurityRequirement{{Schemes: map[string]v1StringList{a2aBearerScheme: {List: []string{}}}}}
	}
	return card
}

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC 2.0 response: a result or an error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// a2aErrorCodes are the protocol's error codes, the same in 0.3 and 1.0.
var a2aErrorCodes = []struct {
	err  error
	code int
}{
	{a2a.ErrParseError, -32700},
	{a2a.ErrInvalidRequest, -32600},
	{a2a.ErrMethodNotFound, -32601},
	{a2a.ErrInvalidParams, -32602},
	{a2a.ErrInternalError, -32603},
	{a2a.ErrTaskNotFound, -32001},
	{a2a.ErrTaskNotCancelable, -32002},
	{a2a.ErrPushNotificationNotSupported, -32003},
	{a2a.ErrUnsupportedOperation, -32004},
	{a2a.ErrUnsupportedContentType, -32005},
	{a2a.ErrAuthenticatedExtendedCardNotConfigured, -32007},
	{errVersionNotSupported, -32009},
}

// rpcErrorOf is err as a JSON-RPC error. 0.3 clients (the a2a-go SDK) read
// the detail from data.error under the code's fixed message; 1.0 clients
// read the message. An error with no protocol code is internal: logged,
// and answered without its text.
func (a *a2aService) rpcErrorOf(ctx context.Context, err error, v1 bool) *rpcError {
	for _, c := range a2aErrorCodes {
		if errors.Is(err, c.err) {
			if v1 {
				return &rpcError{Code: c.code, Message: err.Error()}
			}
			return &rpcError{Code: c.code, Message: c.err.Error(), Data: map[string]any{"error": err.Error()}}
		}
	}
	a.s.log.ErrorContext(ctx, "a2a request failed", "error", err)
	return &rpcError{Code: -32603, Message: a2a.ErrInternalError.Error()}
}

// a2aV1Methods and a2aV03Methods are the methods of each version; their
// names do not overlap, so the name says which wire a request speaks.
var (
	a2aV1Methods = map[string]bool{
		"SendMessage": true, "SendStreamingMessage": true, "GetTask": true, "CancelTask": true, "ListTasks": true,
		"SubscribeToTask": true, "CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
		"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true, "GetExtendedAgentCard": true,
	}
	a2aV03Methods = map[string]bool{
		"message/send": true, "message/stream": true, "tasks/get": true, "tasks/cancel": true, "tasks/resubscribe": true,
		"tasks/pushNotificationConfig/set": true, "tasks/pushNotificationConfig/get": true,
		"tasks/pushNotificationConfig/list": true, "tasks/pushNotificationConfig/delete": true,
		"agent/getAuthenticatedExtendedCard": true,
	}
)

// rpc answers one JSON-RPC request, in the version its method belongs to.
func (a *a2aService) rpc(c *echo.Context) error {
	caller, err := a.callerOf(c)
	if err != nil {
		return err
	}
	r, w := c.Request(), c.Response()
	ctx := r.Context()
	v1 := a2aWantsV1(r)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.s.maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return a.reply(w, nil, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: the body exceeds %d bytes", a2a.ErrInvalidRequest, a.s.maxBodyBytes), v1))
		}
		return fmt.Errorf("reading the A2A request: %w", err)
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return a.reply(w, nil, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: %v", a2a.ErrParseError, err), v1))
	}
	if !validRPCID(req.ID) {
		return a.reply(w, nil, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: id must be a string, a number or null", a2a.ErrInvalidRequest), v1))
	}
	if req.JSONRPC != "2.0" {
		return a.reply(w, req.ID, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: jsonrpc must be \"2.0\"", a2a.ErrInvalidRequest), v1))
	}
	if hv := strings.TrimSpace(r.Header.Get(a2aVersionHdr)); hv != "" && !a2aKnownVersion(hv) {
		// Told in the 1.0 shape: only 1.0 has a code for it.
		return a.reply(w, req.ID, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: A2A-Version %q: this server speaks %s and %s", errVersionNotSupported, hv, a2aV1, a2aV03), true))
	}
	switch {
	case a2aV1Methods[req.Method]:
		return a.serveV1(c, caller, req)
	case a2aV03Methods[req.Method]:
		return a.serveV03(c, caller, req)
	}
	return a.reply(w, req.ID, nil, a.rpcErrorOf(ctx, fmt.Errorf("%w: %q", a2a.ErrMethodNotFound, req.Method), v1))
}

// a2aKnownVersion reports whether an A2A-Version header names 0.3 or 1.x.
func a2aKnownVersion(v string) bool {
	major, minor, _ := strings.Cut(v, ".")
	return major == "1" || major == "0" && (minor == "3" || strings.HasPrefix(minor, "3."))
}

func validRPCID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || string(id) == "null" {
		return true
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// reply writes one JSON-RPC response.
func (a *a2aService) reply(w http.ResponseWriter, id json.RawMessage, result any, rerr *rpcError) error {
	if len(bytes.TrimSpace(id)) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if err != nil {
		return fmt.Errorf("encoding the A2A response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := writeWhole(w, append(b, '\n')); err != nil { // status 200
		return fmt.Errorf("writing the A2A response: %w", err)
	}
	return nil
}

// sseStream writes JSON-RPC responses as server-sent events.
type sseStream struct {
	w       http.ResponseWriter
	id      json.RawMessage
	started bool
}

func (s *sseStream) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sseStream) send(result any, rerr *rpcError) error {
	s.start()
	id := s.id
	if len(bytes.TrimSpace(id)) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if err != nil {
		return fmt.Errorf("encoding an A2A event: %w", err)
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return fmt.Errorf("writing an A2A event: %w", err)
	}
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		return fmt.Errorf("flushing an A2A event: %w", err)
	}
	return nil
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
