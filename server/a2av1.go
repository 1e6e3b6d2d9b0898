package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/labstack/echo/v5"
)

// The A2A 1.0 wire shapes: the protocol's protobuf messages in their JSON
// form (lowerCamel names, enums as TASK_STATE_… and ROLE_…, a part is one
// of text, data, url or raw; a stream event is one of task, message,
// statusUpdate or artifactUpdate).

type v1Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type v1Card struct {
	Name                 string                      `json:"name"`
	Description          string                      `json:"description"`
	SupportedInterfaces  []v1Interface               `json:"supportedInterfaces"`
	Version              string                      `json:"version"`
	Capabilities         v1Capabilities              `json:"capabilities"`
	SecuritySchemes      map[string]v1SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []v1SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                    `json:"defaultInputModes"`
	DefaultOutputModes   []string                    `json:"defaultOutputModes"`
	Skills               []v1Skill                   `json:"skills"`
}

type v1Capabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
}

type v1SecurityScheme struct {
	HTTPAuth *v1HTTPAuth `json:"httpAuthSecurityScheme,omitempty"`
}

type v1HTTPAuth struct {
	Scheme      string `json:"scheme"`
	Description string `json:"description,omitempty"`
}

type v1SecurityRequirement struct {
	Schemes map[string]v1StringList `json:"schemes"`
}

type v1StringList struct {
	List []string `json:"list"`
}

type v1Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type v1Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []v1Part       `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type v1Status struct {
	State     string     `json:"state"`
	Message   *v1Message `json:"message,omitempty"`
	Timestamp string     `json:"timestamp,omitempty"`
}

type v1Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []v1Part       `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type v1Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    v1Status       `json:"status"`
	Artifacts []v1Artifact   `json:"artifacts,omitempty"`
	History   []v1Message    `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type v1StatusUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Status    v1Status `json:"status"`
}

type v1ArtifactUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Artifact  v1Artifact `json:"artifact"`
	LastChunk bool       `json:"lastChunk,omitempty"`
}

type v1StreamResponse struct {
	Task           *v1Task           `json:"task,omitempty"`
	StatusUpdate   *v1StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *v1ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

type v1SendRequest struct {
	Tenant        string     `json:"tenant,omitempty"`
	Message       *v1Message `json:"message"`
	Configuration *struct {
		HistoryLength *int `json:"historyLength,omitempty"`
	} `json:"configuration,omitempty"`
}

type v1TaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

type v1ListRequest struct {
	Tenant           string `json:"tenant,omitempty"`
	ContextID        string `json:"contextId,omitempty"`
	Status           string `json:"status,omitempty"`
	PageSize         *int   `json:"pageSize,omitempty"`
	PageToken        string `json:"pageToken,omitempty"`
	HistoryLength    *int   `json:"historyLength,omitempty"`
	IncludeArtifacts bool   `json:"includeArtifacts,omitempty"`
}

type v1ListResponse struct {
	Tasks         []v1Task `json:"tasks"`
	NextPageToken string   `json:"nextPageToken"`
	PageSize      int      `json:"pageSize"`
	TotalSize     int      `json:"totalSize"`
}

// ListTasks page sizes: the default, and the most one page may hold.
const (
	a2aListPageSize    = 50
	a2aListMaxPageSize = 100
)

// serveV1 answers a 1.0 method.
func (a *a2aService) serveV1(c *echo.Context, caller a2aCaller, req rpcRequest) error {
	ctx, w := c.Request().Context(), c.Response()
	fail := func(err error) error { return a.reply(w, req.ID, nil, a.rpcErrorOf(ctx, err, true)) }
	switch req.Method {
	case "SendMessage":
		var p v1SendRequest
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		msg, err := p.Message.toA2A()
		if err != nil {
			return fail(err)
		}
		t, err := a.send(ctx, caller, msg, nil)
		if err != nil {
			return fail(err)
		}
		var n *int
		if p.Configuration != nil {
			n = p.Configuration.HistoryLength
		}
		return a.reply(w, req.ID, map[string]any{"task": v1TaskOf(*trimHistory(t, n))}, nil)
	case "SendStreamingMessage", "SubscribeToTask":
		stream := &sseStream{w: w, id: req.ID}
		emit := func(ev a2a.Event) error { return stream.send(v1EventOf(ev), nil) }
		var err error
		if req.Method == "SendStreamingMessage" {
			var p v1SendRequest
			if err = decodeParams(req.Params, &p); err == nil {
				var msg *a2a.Message
				if msg, err = p.Message.toA2A(); err == nil {
					_, err = a.send(ctx, caller, msg, emit)
				}
			}
		} else {
			var p v1TaskRequest
			if err = decodeParams(req.Params, &p); err == nil {
				err = a.subscribe(ctx, caller, a2a.TaskID(p.ID), emit)
			}
		}
		switch {
		case err == nil:
			stream.start()
			return nil
		case !stream.started:
			return fail(err) // before the stream: a plain JSON-RPC error
		case ctx.Err() == nil:
			return stream.send(nil, a.rpcErrorOf(ctx, err, true))
		}
		return nil
	case "GetTask":
		var p v1TaskRequest
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		t, err := a.get(ctx, caller, a2a.TaskID(p.ID))
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, v1TaskOf(*trimHistory(t, p.HistoryLength)), nil)
	case "CancelTask":
		var p v1TaskRequest
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		t, err := a.cancel(caller, a2a.TaskID(p.ID))
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, v1TaskOf(t), nil)
	case "ListTasks":
		var p v1ListRequest
		if len(bytes.TrimSpace(req.Params)) > 0 && string(req.Params) != "null" {
			if err := decodeParams(req.Params, &p); err != nil {
				return fail(err)
			}
		}
		res, err := a.listV1(c, caller, p)
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, res, nil)
	case "GetExtendedAgentCard":
		return fail(fmt.Errorf("%w: the card at %s is the only one", a2a.ErrAuthenticatedExtendedCardNotConfigured, a2aCardPath))
	}
	return fail(fmt.Errorf("%w: the card does not offer push notifications", a2a.ErrPushNotificationNotSupported))
}

// listV1 answers ListTasks: the caller's tasks, newest first, a page at a
// time. With includeArtifacts each task is read as GetTask reads it.
func (a *a2aService) listV1(c *echo.Context, caller a2aCaller, p v1ListRequest) (v1ListResponse, error) {
	size := a2aListPageSize
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > a2aListMaxPageSize {
			return v1ListResponse{}, fmt.Errorf("%w: pageSize: want 1 to %d, got %d", a2a.ErrInvalidParams, a2aListMaxPageSize, *p.PageSize)
		}
		size = *p.PageSize
	}
	var state a2a.TaskState
	if p.Status != "" && p.Status != "TASK_STATE_UNSPECIFIED" {
		s, ok := a2aStateOf(p.Status)
		if !ok {
			return v1ListResponse{}, fmt.Errorf("%w: status: %q is not a task state (TASK_STATE_COMPLETED…)", a2a.ErrInvalidParams, p.Status)
		}
		state = s
	}
	offset := 0
	if p.PageToken != "" {
		n, err := strconv.Atoi(p.PageToken)
		if err != nil || n < 0 {
			return v1ListResponse{}, fmt.Errorf("%w: pageToken: %q is not a token this server gave", a2a.ErrInvalidParams, p.PageToken)
		}
		offset = n
	}
	var match []a2a.Task
	for _, t := range a.tasks.list(caller.owner) {
		if (p.ContextID == "" || t.ContextID == p.ContextID) && (state == "" || t.Status.State == state) {
			match = append(match, t)
		}
	}
	res := v1ListResponse{Tasks: []v1Task{}, PageSize: size, TotalSize: len(match)}
	if offset >= len(match) {
		return res, nil
	}
	end := min(offset+size, len(match))
	if end < len(match) {
		res.NextPageToken = strconv.Itoa(end)
	}
	// One request deadline for the page, however many packs are stale.
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.s.requestTimeout)
	defer cancel()
	for _, t := range match[offset:end] {
		if p.IncludeArtifacts {
			fresh, err := a.get(ctx, caller, t.ID)
			if err != nil {
				return v1ListResponse{}, err
			}
			t = fresh
		} else {
			t.Artifacts = nil
		}
		res.Tasks = append(res.Tasks, v1TaskOf(*trimHistory(t, p.HistoryLength)))
	}
	return res, nil
}

// toA2A reads a 1.0 message into the a2a-go type the service works on.
func (m *v1Message) toA2A() (*a2a.Message, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
	}
	if m == nil {
		return nil, invalid("message is required")
	}
	var role a2a.MessageRole
	switch m.Role {
	case "ROLE_USER":
		role = a2a.MessageRoleUser
	case "ROLE_AGENT":
		role = a2a.MessageRoleAgent
	default:
		return nil, invalid("message.role: want ROLE_USER or ROLE_AGENT, got %q", m.Role)
	}
	out := &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Role: role,
		Metadata: m.Metadata, Extensions: m.Extensions}
	for _, id := range m.ReferenceTaskIDs {
		out.ReferenceTasks = append(out.ReferenceTasks, a2a.TaskID(id))
	}
	for i, p := range m.Parts {
		switch {
		case p.Text != nil:
			out.Parts = append(out.Parts, a2a.TextPart{Text: *p.Text, Metadata: p.Metadata})
		case len(p.Data) > 0:
			var data map[string]any
			if err := json.Unmarshal(p.Data, &data); err != nil || data == nil {
				return nil, invalid("message.parts[%d].data: want a JSON object (a ContextRequest)", i)
			}
			out.Parts = append(out.Parts, a2a.DataPart{Data: data, Metadata: p.Metadata})
		case p.URL != "":
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileURI{URI: p.URL, FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}}, Metadata: p.Metadata})
		case p.Raw != nil:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileBytes{Bytes: base64.StdEncoding.EncodeToString(p.Raw), FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}}, Metadata: p.Metadata})
		default:
			return nil, invalid("message.parts[%d]: want one of text, data, url or raw", i)
		}
	}
	return out, nil
}

func v1MessageOf(m *a2a.Message) v1Message {
	role := "ROLE_USER"
	if m.Role == a2a.MessageRoleAgent {
		role = "ROLE_AGENT"
	}
	out := v1Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role,
		Parts: v1PartsOf(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTaskIDs = append(out.ReferenceTaskIDs, string(id))
	}
	return out
}

func v1PartsOf(parts a2a.ContentParts) []v1Part {
	out := make([]v1Part, 0, len(parts))
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, v1Part{Text: &p.Text, Metadata: p.Metadata})
		case a2a.DataPart:
			raw, _ := json.Marshal(p.Data)
			out = append(out, v1Part{Data: raw, MediaType: "application/json", Metadata: p.Metadata})
		case a2a.FilePart:
			switch f := p.File.(type) {
			case a2a.FileURI:
				out = append(out, v1Part{URL: f.URI, Filename: f.Name, MediaType: f.MimeType, Metadata: p.Metadata})
			case a2a.FileBytes:
				raw, _ := base64.StdEncoding.DecodeString(f.Bytes)
				out = append(out, v1Part{Raw: raw, Filename: f.Name, MediaType: f.MimeType, Metadata: p.Metadata})
			}
		}
	}
	return out
}

func v1StatusOf(s a2a.TaskStatus) v1Status {
	out := v1Status{State: v1StateOf(s.State)}
	if s.Message != nil {
		m := v1MessageOf(s.Message)
		out.Message = &m
	}
	if s.Timestamp != nil {
		out.Timestamp = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func v1ArtifactOf(a *a2a.Artifact) v1Artifact {
	return v1Artifact{ArtifactID: string(a.ID), Name: a.Name, Description: a.Description, Parts: v1PartsOf(a.Parts), Metadata: a.Metadata}
}

func v1TaskOf(t a2a.Task) v1Task {
	out := v1Task{ID: string(t.ID), ContextID: t.ContextID, Status: v1StatusOf(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, v1ArtifactOf(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, v1MessageOf(m))
	}
	return out
}

// v1EventOf is a streamed event in its 1.0 form.
func v1EventOf(ev a2a.Event) v1StreamResponse {
	switch ev := ev.(type) {
	case *a2a.Task:
		t := v1TaskOf(*ev)
		return v1StreamResponse{Task: &t}
	case *a2a.TaskArtifactUpdateEvent:
		return v1StreamResponse{ArtifactUpdate: &v1ArtifactUpdate{TaskID: string(ev.TaskID), ContextID: ev.ContextID,
			Artifact: v1ArtifactOf(ev.Artifact), LastChunk: ev.LastChunk}}
	case *a2a.TaskStatusUpdateEvent:
		return v1StreamResponse{StatusUpdate: &v1StatusUpdate{TaskID: string(ev.TaskID), ContextID: ev.ContextID, Status: v1StatusOf(ev.Status)}}
	}
	return v1StreamResponse{}
}

// v1StateOf is TASK_STATE_COMPLETED for completed, TASK_STATE_INPUT_REQUIRED
// for input-required…
func v1StateOf(s a2a.TaskState) string {
	if s == a2a.TaskStateUnspecified || s == a2a.TaskStateUnknown {
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

var a2aStates = []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
	a2a.TaskStateCanceled, a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired}

func a2aStateOf(v1 string) (a2a.TaskState, bool) {
	for _, s := range a2aStates {
		if v1StateOf(s) == v1 {
			return s, true
		}
	}
	return "", false
}
