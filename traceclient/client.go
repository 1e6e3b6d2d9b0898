package traceclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/net/websocket"

	"github.com/h4r/h4r/trace"
)

// Config configures a client; the zero value is a disabled client.
type Config struct {
	Enabled         bool
	ServiceEndpoint string        // H4R's base URL, e.g. http://localhost:8080
	APIKey          string        // sent as Authorization: Bearer
	NatsURL         string        // empty: PublishTrace posts to /v1/traces instead
	Subject         string        // default trace.DefaultTraceSubject
	Timeout         time.Duration // of one HTTP call; default 10 s
	Logger          *slog.Logger
}

// DefaultConfig is the document's default: disabled.
func DefaultConfig() Config {
	return Config{ServiceEndpoint: "http://localhost:8080", NatsURL: "nats://localhost:4222", Timeout: 10 * time.Second}
}

// Client talks to H4R. It is safe for concurrent use.
type Client struct {
	enabled  bool
	endpoint string
	apiKey   string
	subject  string
	http     *http.Client
	nc       *nats.Conn
	js       jetstream.JetStream
	log      *slog.Logger
}

// New returns a client. A NATS server that cannot be reached is not an
// error: PublishTrace then posts to /v1/traces.
func New(cfg Config) (*Client, error) {
	if !cfg.Enabled {
		return &Client{}, nil
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Subject == "" {
		cfg.Subject = trace.DefaultTraceSubject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Client{enabled: true, endpoint: strings.TrimRight(cfg.ServiceEndpoint, "/"), apiKey: cfg.APIKey,
		subject: cfg.Subject, http: &http.Client{Timeout: cfg.Timeout}, log: cfg.Logger}
	if cfg.NatsURL != "" {
		nc, err := nats.Connect(cfg.NatsURL, nats.Name("h4r-traceclient"), nats.Timeout(cfg.Timeout))
		if err != nil {
			c.log.Warn("NATS unreachable: traces will be posted over HTTP", "url", cfg.NatsURL, "error", err)
		} else if js, err := jetstream.New(nc); err != nil {
			nc.Close()
			c.log.Warn("JetStream unavailable: traces will be posted over HTTP", "error", err)
		} else {
			c.nc, c.js = nc, js
		}
	}
	return c, nil
}

// Close closes the NATS connection.
func (c *Client) Close() error {
	if c.nc != nil {
		c.nc.Close()
	}
	return nil
}

// PublishTrace publishes a trace on the traces subject with ctx's trace
// context in its headers (or posts it to /v1/traces without NATS). It is
// the one write: its error says the trace was not accepted, for the
// caller to log.
func (c *Client) PublishTrace(ctx context.Context, t *trace.CommitTrace) error {
	if !c.enabled {
		return nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encoding the trace: %w", err)
	}
	if c.js != nil {
		msg := &nats.Msg{Subject: c.subject, Data: data, Header: nats.Header{}}
		trace.InjectTraceContext(ctx, msg.Header)
		if _, err := c.js.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("publishing the trace on %s: %w", c.subject, err)
		}
		return nil
	}
	status, body, err := c.post(ctx, "/v1/traces", data)
	if err != nil {
		return fmt.Errorf("posting the trace: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("posting the trace: H4R answered %d: %s", status, errorMessage(body))
	}
	return nil
}

// SearchOptions are the document's search options.
type SearchOptions struct {
	Repo             string
	Areas            []string
	Status           string
	Mode             string
	Since            *time.Time
	Author           string
	Limit            int
	IncludeDecisions bool
	MinScore         float64
}

// Search finds traces like query; empty results when H4R is disabled or
// unreachable.
func (c *Client) Search(ctx context.Context, query string, opts SearchOptions) (*trace.SearchResponse, error) {
	out := &trace.SearchResponse{}
	if !c.enabled {
		return out, nil
	}
	req := trace.SearchRequest{Query: query, Limit: opts.Limit, IncludeDecisions: opts.IncludeDecisions, MinScore: opts.MinScore,
		Filters: trace.SearchFilters{Repo: opts.Repo, Areas: opts.Areas, Status: opts.Status, Mode: opts.Mode, Since: opts.Since, Author: opts.Author}}
	if err := c.call(ctx, "/v1/search", req, out); err != nil {
		return &trace.SearchResponse{}, err
	}
	return out, nil
}

// PrefetchRequest is the document's POST /v1/prefetch body.
type PrefetchRequest struct {
	Repo            string   `json:"repo"`
	Branch          string   `json:"branch,omitempty"`
	Areas           []string `json:"areas,omitempty"`
	RecentFiles     []string `json:"recent_files,omitempty"`
	TaskDescription string   `json:"task_description,omitempty"`
	Limit           int      `json:"limit,omitempty"`
}

// Precedent is one relevant past trace.
type Precedent struct {
	Trace       map[string]any `json:"trace"`
	Relevance   float64        `json:"relevance"`
	MatchReason string         `json:"match_reason,omitempty"`
	// Set on ambient pushes (Subscribe).
	Type       string `json:"type,omitempty"`
	Trigger    string `json:"trigger,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
}

// SHA and Summary read the precedent's trace.
func (p Precedent) SHA() string     { s, _ := p.Trace["sha"].(string); return s }
func (p Precedent) Summary() string { s, _ := p.Trace["summary"].(string); return s }

// PrefetchResults is the document's prefetch answer.
type PrefetchResults struct {
	Precedents  []Precedent `json:"precedents"`
	Summary     string      `json:"summary"`
	Suggestions []string    `json:"suggestions"`
}

// Prefetch returns precedents for a starting session; empty when H4R is
// disabled, unreachable, or does not serve /v1/prefetch.
func (c *Client) Prefetch(ctx context.Context, req PrefetchRequest) (*PrefetchResults, error) {
	out := &PrefetchResults{}
	if !c.enabled {
		return out, nil
	}
	if err := c.call(ctx, "/v1/prefetch", req, out); err != nil {
		return &PrefetchResults{}, err
	}
	return out, nil
}

// EscalationRequest is the document's POST /v1/escalation body.
type EscalationRequest struct {
	Repo        string   `json:"repo"`
	Area        string   `json:"area,omitempty"`
	CurrentTier int      `json:"current_tier"`
	Iterations  int      `json:"iterations"`
	Errors      []string `json:"errors,omitempty"`
	TaskType    string   `json:"task_type,omitempty"`
}

// EscalationHint is the document's escalation answer.
type EscalationHint struct {
	Recommendation struct {
		Action     string  `json:"action"`
		TargetTier int     `json:"target_tier"`
		Confidence float64 `json:"confidence"`
	} `json:"recommendation"`
	Reasoning    string           `json:"reasoning"`
	SimilarCases []map[string]any `json:"similar_cases,omitempty"`
	Alternative  map[string]any   `json:"alternative,omitempty"`
}

// EscalationHint asks for an escalation recommendation; nil when H4R is
// disabled, unreachable, or does not serve /v1/escalation.
func (c *Client) EscalationHint(ctx context.Context, req EscalationRequest) (*EscalationHint, error) {
	if !c.enabled {
		return nil, nil
	}
	var out EscalationHint
	if err := c.call(ctx, "/v1/escalation", req, &out); err != nil || out.Recommendation.Action == "" {
		return nil, err
	}
	return &out, nil
}

// ContextUpdate is what a session tells the ambient subscription about
// its work; H4R pushes precedents that match it.
type ContextUpdate struct {
	Repo            string   `json:"repo"`
	Areas           []string `json:"areas,omitempty"`
	CurrentTask     string   `json:"current_task,omitempty"`
	RecentDecisions []string `json:"recent_decisions,omitempty"`
}

// Subscription is a session's ambient precedent subscription. Precedents
// closes when the context of Subscribe ends or the connection does.
type Subscription struct {
	Precedents <-chan Precedent
	ws         *websocket.Conn // nil: disabled or unreachable
	mu         sync.Mutex      // one writer at a time
}

// Update sends a context_update: H4R pushes the precedents that match
// it, now and as new traces arrive. It does nothing on a subscription
// that is disabled or unreachable.
func (s *Subscription) Update(ctx context.Context, u ContextUpdate) error {
	if s.ws == nil {
		return nil
	}
	msg := struct {
		Type string `json:"type"`
		ContextUpdate
	}{"context_update", u}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := ctx.Deadline(); ok {
		_ = s.ws.SetWriteDeadline(d)
		defer func() { _ = s.ws.SetWriteDeadline(time.Time{}) }()
	}
	if err := websocket.JSON.Send(s.ws, msg); err != nil {
		return fmt.Errorf("sending a context update: %w", err)
	}
	return nil
}

// Subscribe opens the ambient precedent subscription of a session and
// sends first as its first context_update (H4R pushes nothing before it
// knows the session's repository). Precedents is closed at once when H4R
// is disabled or unreachable.
func (c *Client) Subscribe(ctx context.Context, sessionID string, first ContextUpdate) (*Subscription, error) {
	ch := make(chan Precedent)
	closed := func() (*Subscription, error) {
		close(ch)
		return &Subscription{Precedents: ch}, nil
	}
	if !c.enabled {
		return closed()
	}
	u, err := url.Parse(c.endpoint + "/v1/subscribe")
	if err != nil {
		return closed()
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.RawQuery = url.Values{"session_id": {sessionID}}.Encode()
	wc, err := websocket.NewConfig(u.String(), c.endpoint)
	if err != nil {
		return closed()
	}
	if c.apiKey != "" {
		wc.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	ws, err := wc.DialContext(ctx)
	if err != nil {
		c.log.Warn("ambient precedents unavailable", "error", err)
		return closed()
	}
	sub := &Subscription{Precedents: ch, ws: ws}
	if err := sub.Update(ctx, first); err != nil {
		ws.Close()
		c.log.Warn("ambient precedents unavailable", "error", err)
		sub.ws = nil
		return closed()
	}
	go func() {
		<-ctx.Done()
		ws.Close()
	}()
	go func() {
		defer close(ch)
		for {
			var p Precedent
			if err := websocket.JSON.Receive(ws, &p); err != nil {
				return
			}
			if p.Type != "" && p.Type != "precedent" { // errors, notices
				continue
			}
			select {
			case ch <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	return sub, nil
}

// RefusedError is H4R refusing a request as invalid.
type RefusedError struct {
	Status  int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("H4R refused the request (%d): %s", e.Status, e.Message)
}

// call posts in and decodes the answer into out. Only a refusal of the
// request itself (4xx but 404 and 429) is an error; every other failure
// is logged and leaves out empty.
func (c *Client) call(ctx context.Context, path string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding the request to %s: %w", path, err)
	}
	status, body, err := c.post(ctx, path, data)
	switch {
	case err != nil:
		c.log.Warn("H4R unreachable", "path", path, "error", err)
		return nil
	case status == http.StatusOK:
		if err := json.Unmarshal(body, out); err != nil {
			c.log.Warn("H4R answered what this client cannot read", "path", path, "error", err)
		}
		return nil
	case status >= 400 && status < 500 && status != http.StatusNotFound && status != http.StatusTooManyRequests:
		return &RefusedError{Status: status, Message: errorMessage(body)}
	default:
		c.log.Warn("H4R failed", "path", path, "status", status, "error", errorMessage(body))
		return nil
	}
}

func (c *Client) post(ctx context.Context, path string, data []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+path, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, err
	}
	return res.StatusCode, body, nil
}

// errorMessage reads the item contract's error shape, or returns the body.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		if e.Error.Field != "" {
			return e.Error.Field + ": " + e.Error.Message
		}
		return e.Error.Message
	}
	return fmt.Sprintf("%.200s", body)
}
