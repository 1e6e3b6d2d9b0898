package decision

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/scs"
)

// Defaults of the ambient hub: the push conditions of ambient precedents.
const (
	DefaultPushThreshold   = 0.75
	DefaultPushDebounce    = 30 * time.Second
	DefaultMaxPerSession   = 10
	DefaultMaxPerPrincipal = 100
	DefaultSendBuffer      = 16
)

// ContextUpdate is what a subscriber sends.
type ContextUpdate struct {
	Type            string   `json:"type"`
	Repo            string   `json:"repo"`
	Areas           []string `json:"areas,omitempty"`
	CurrentTask     string   `json:"current_task,omitempty"`
	RecentDecisions []string `json:"recent_decisions,omitempty"`
}

// Push is what the hub sends a subscriber.
type Push struct {
	Type       string  `json:"type"` // "precedent"
	Trace      Wire    `json:"trace"`
	Relevance  float64 `json:"relevance"`
	Trigger    string  `json:"trigger"`
	Suggestion string  `json:"suggestion"`
}

// Fanout carries "these items were ingested" to every replica's hub, the
// one that ingested them included (NATS across replicas; LocalFanout in
// one process).
type Fanout interface {
	Publish(ctx context.Context, ids []string) error
	Subscribe(fn func(ids []string)) (stop func() error, err error)
}

// LocalFanout delivers within the process only.
type LocalFanout struct {
	mu   sync.Mutex
	subs map[int]func([]string)
	next int
}

// Publish calls every subscriber.
func (l *LocalFanout) Publish(_ context.Context, ids []string) error {
	l.mu.Lock()
	fns := make([]func([]string), 0, len(l.subs))
	for _, fn := range l.subs {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(ids)
	}
	return nil
}

// Subscribe adds fn.
func (l *LocalFanout) Subscribe(fn func(ids []string)) (func() error, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[int]func([]string){}
	}
	id := l.next
	l.next++
	l.subs[id] = fn
	return func() error {
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
		return nil
	}, nil
}

// LimitError refuses a subscription; Reason is the close reason.
type LimitError struct{ Reason string }

func (e *LimitError) Error() string { return e.Reason }

// Hub keeps the ambient subscriptions: sessions, their connections and
// context, and what was surfaced. It pushes a precedent to a session only
// when its relevance is above the threshold, it is new to the session,
// and no push went to the session within the debounce window.
type Hub struct {
	svc    *Service
	fanout Fanout
	log    *slog.Logger
	now    func() time.Time

	threshold       float64
	debounce        time.Duration
	maxPerSession   int
	maxPerPrincipal int
	sendBuffer      int

	mu          sync.Mutex
	sessions    map[string]*ambientSession
	principals  map[string]int
	stop        func() error
	onConnCount func(delta int)
}

type ambientSession struct {
	id        string
	principal string
	spec      h4r.Specialist
	sit       *Situation
	surfaced  map[string]bool
	lastPush  time.Time
	conns     map[*Subscriber]bool
}

// Subscriber is one connection. Pushes arrive on Out; Dropped is closed
// when the hub drops it (too slow), with the reason in Reason.
type Subscriber struct {
	Out     chan Push
	Dropped chan struct{}
	session *ambientSession
	once    sync.Once
	reason  string
}

// Reason says why the hub dropped the subscriber.
func (s *Subscriber) Reason() string { return s.reason }

func (s *Subscriber) drop(reason string) {
	s.once.Do(func() { s.reason = reason; close(s.Dropped) })
}

// HubOption configures a Hub.
type HubOption func(*Hub)

// WithPushThreshold sets the relevance a precedent must exceed (0.75).
func WithPushThreshold(t float64) HubOption { return func(h *Hub) { h.threshold = t } }

// WithPushDebounce sets the least time between two pushes to a session (30 s).
func WithPushDebounce(d time.Duration) HubOption { return func(h *Hub) { h.debounce = d } }

// WithMaxConnectionsPerSession caps a session's connections (10).
func WithMaxConnectionsPerSession(n int) HubOption { return func(h *Hub) { h.maxPerSession = n } }

// WithMaxConnectionsPerPrincipal caps one API key's (principal's)
// connections (100).
func WithMaxConnectionsPerPrincipal(n int) HubOption { return func(h *Hub) { h.maxPerPrincipal = n } }

// WithSendBuffer sets how many pushes may wait for a slow subscriber
// before it is dropped (16).
func WithSendBuffer(n int) HubOption { return func(h *Hub) { h.sendBuffer = max(n, 1) } }

// WithHubLogger sets the logger.
func WithHubLogger(l *slog.Logger) HubOption { return func(h *Hub) { h.log = l } }

// WithHubClock sets the clock of the debounce.
func WithHubClock(now func() time.Time) HubOption { return func(h *Hub) { h.now = now } }

// WithConnectionGauge reports each connection opened (+1) and closed (-1).
func WithConnectionGauge(fn func(delta int)) HubOption { return func(h *Hub) { h.onConnCount = fn } }

// NewHub returns a hub over svc that hears of ingested items through
// fanout (nil: in this process only), and subscribes to it.
func NewHub(svc *Service, fanout Fanout, opts ...HubOption) (*Hub, error) {
	if fanout == nil {
		fanout = &LocalFanout{}
	}
	h := &Hub{svc: svc, fanout: fanout, log: slog.Default(), now: time.Now,
		threshold: DefaultPushThreshold, debounce: DefaultPushDebounce, maxPerSession: DefaultMaxPerSession,
		maxPerPrincipal: DefaultMaxPerPrincipal, sendBuffer: DefaultSendBuffer,
		sessions: map[string]*ambientSession{}, principals: map[string]int{}}
	for _, o := range opts {
		o(h)
	}
	stop, err := fanout.Subscribe(func(ids []string) { h.notify(context.Background(), ids) })
	if err != nil {
		return nil, fmt.Errorf("subscribing to ingested items: %w", err)
	}
	h.stop = stop
	return h, nil
}

// Close stops hearing of ingested items.
func (h *Hub) Close() error { return h.stop() }

// Join adds a connection to a session for spec. A session belongs to the
// principal that opened it; more than the session's or the principal's
// connections are refused with a LimitError saying which limit.
func (h *Hub) Join(sessionID string, spec h4r.Specialist) (*Subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.principals[spec.ID]; n >= h.maxPerPrincipal {
		return nil, &LimitError{Reason: fmt.Sprintf("this API key already has %d WebSocket connections open, the limit", n)}
	}
	s := h.sessions[sessionID]
	if s == nil {
		s = &ambientSession{id: sessionID, principal: spec.ID, spec: spec, surfaced: map[string]bool{}, conns: map[*Subscriber]bool{}}
		h.sessions[sessionID] = s
	}
	if s.principal != spec.ID {
		return nil, &LimitError{Reason: "this session belongs to another API key"}
	}
	if len(s.conns) >= h.maxPerSession {
		return nil, &LimitError{Reason: fmt.Sprintf("this session already has %d connections, the limit", len(s.conns))}
	}
	sub := &Subscriber{Out: make(chan Push, h.sendBuffer), Dropped: make(chan struct{}), session: s}
	s.conns[sub] = true
	h.principals[spec.ID]++
	if h.onConnCount != nil {
		h.onConnCount(1)
	}
	return sub, nil
}

// Leave removes a connection; a session without connections is
// forgotten.
func (h *Hub) Leave(sub *Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := sub.session
	if !s.conns[sub] {
		return
	}
	delete(s.conns, sub)
	if h.principals[s.principal]--; h.principals[s.principal] <= 0 {
		delete(h.principals, s.principal)
	}
	if len(s.conns) == 0 {
		delete(h.sessions, s.id)
	}
	if h.onConnCount != nil {
		h.onConnCount(-1)
	}
}

// Update records the session's context and pushes the most relevant
// precedent for it, when the push conditions hold.
func (h *Hub) Update(ctx context.Context, sub *Subscriber, u ContextUpdate) error {
	if strings.TrimSpace(u.Repo) == "" {
		return h4r.Errorf(h4r.EINVALID, "repo", "repo is required (org/repo)")
	}
	sit := Situation{Repo: u.Repo, Areas: u.Areas, Text: strings.Join(append([]string{u.CurrentTask}, u.RecentDecisions...), " ")}
	h.mu.Lock()
	s := sub.session
	s.sit = &sit
	spec := s.spec
	h.mu.Unlock()
	ranked, err := h.svc.rankTraces(ctx, spec, sit)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range ranked {
		if t.relevance <= h.threshold {
			break // ranked: none after is above it
		}
		if s.surfaced[t.item.ID()] {
			continue
		}
		h.pushLocked(s, t)
		break
	}
	return nil
}

// Ingested tells every replica's hub (through the fanout) that items
// were written, so that their sessions may get them as precedents.
func (h *Hub) Ingested(ctx context.Context, ids []string) {
	if err := h.fanout.Publish(ctx, ids); err != nil {
		h.log.WarnContext(ctx, "ambient fan-out failed; other replicas' subscribers miss these items", "items", len(ids), "error", err)
	}
}

// notify scores new items against every session's context.
func (h *Hub) notify(ctx context.Context, ids []string) {
	h.mu.Lock()
	idle := len(h.sessions) == 0
	h.mu.Unlock()
	if idle {
		return
	}
	var items []*h4r.Item
	for _, id := range ids {
		it, err := h.svc.store.Get(ctx, id)
		if err != nil || (it.Kind != KindCommitTrace && it.Kind != KindTrace) {
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return
	}
	h.mu.Lock()
	sessions := make([]*ambientSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		if s.sit != nil {
			sessions = append(sessions, s)
		}
	}
	h.mu.Unlock()
	for _, s := range sessions {
		h.mu.Lock()
		sit, spec := *s.sit, s.spec
		h.mu.Unlock()
		var mine []*h4r.Item
		for _, it := range items {
			if it.Metadata.Extra["repo"] == sit.Repo || it.Metadata.Extra["project_key"] == sit.Repo {
				mine = append(mine, it)
			}
		}
		if len(mine) == 0 {
			continue
		}
		// Scored as the session's key may see them: never pushed past
		// policy, nor chosen or described by a redacted value.
		ranked := h.svc.rank(ctx, spec, sit, mine)
		h.mu.Lock()
		for _, t := range ranked {
			if t.relevance <= h.threshold {
				break // ranked: none after is above it
			}
			if !s.surfaced[t.item.ID()] {
				h.pushLocked(s, t)
				break
			}
		}
		h.mu.Unlock()
	}
}

// pushLocked sends t to every connection of s, if the debounce allows.
// A connection whose buffer is full is dropped, never waited for.
func (h *Hub) pushLocked(s *ambientSession, t visibleTrace) {
	now := h.now()
	if !s.lastPush.IsZero() && now.Sub(s.lastPush) < h.debounce {
		return
	}
	s.lastPush = now
	s.surfaced[t.item.ID()] = true
	p := Push{Type: "precedent", Trace: t.wire, Relevance: round3(t.relevance),
		Trigger: triggerText(t, now), Suggestion: suggestionText(t.item)}
	for sub := range s.conns {
		select {
		case sub.Out <- p:
		default:
			sub.drop(fmt.Sprintf("the client reads too slowly: %d pushes were waiting", cap(sub.Out)))
		}
	}
}

// triggerText says why the precedent came, from the cleared trace and
// the reason measured on it.
func triggerText(t visibleTrace, now time.Time) string {
	it := t.item.Item()
	age := now.Sub(it.Metadata.CreatedAt)
	when := "today"
	switch days := int(age.Hours() / 24); {
	case days >= 60:
		when = fmt.Sprintf("%d months ago", days/30)
	case days >= 2:
		when = fmt.Sprintf("%d days ago", days)
	case days == 1:
		when = "yesterday"
	}
	return fmt.Sprintf("Your context matches a %s from %s: %s", strings.ReplaceAll(it.Kind, "_", " "), when, t.reason)
}

// suggestionText is what the precedent teaches: a decision's rationale
// and rejected alternatives, or a trace's summary and first decision, as
// the slicer cleared them (redacted values read as the marker).
func suggestionText(cleared scs.Cleared) string {
	it := cleared.Item()
	if r, _ := it.Content["rationale"].(string); r != "" {
		return "That decision: " + r
	}
	parts := []string{}
	if s, _ := it.Content["summary"].(string); s != "" {
		parts = append(parts, s)
	} else {
		parts = append(parts, it.Text)
	}
	if ds, _ := it.Content["decisions"].([]any); len(ds) > 0 {
		if m, ok := ds[0].(map[string]any); ok {
			if r, _ := m["reasoning"].(string); r != "" {
				parts = append(parts, r)
			}
		}
	}
	return "That work: " + strings.Join(parts, "; ")
}
