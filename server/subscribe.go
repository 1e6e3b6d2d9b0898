package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// AmbientHub keeps ambient subscriptions (decision.Hub).
type AmbientHub interface {
	Join(sessionID string, spec h4r.Specialist) (*decision.Subscriber, error)
	Leave(sub *decision.Subscriber)
	Update(ctx context.Context, sub *decision.Subscriber, u decision.ContextUpdate) error
	Ingested(ctx context.Context, ids []string)
}

// Defaults of the WebSocket.
const (
	DefaultPingInterval = 20 * time.Second
	wsWriteTimeout      = 5 * time.Second
	wsReadLimit         = 64 << 10
)

// WithAmbient serves GET /v1/subscribe over hub, and tells it of items
// ingested through this server; pingEvery is the keepalive (0: default).
func WithAmbient(hub AmbientHub, pingEvery time.Duration) Option {
	return func(s *Server) {
		s.ambient = hub
		s.pingEvery = pingEvery
		if s.pingEvery <= 0 {
			s.pingEvery = DefaultPingInterval
		}
	}
}

// wsGauge is context_websocket_connections_active, registered with the
// server's metrics once.
func (s *Server) wsConnections() prometheus.Gauge {
	s.wsGaugeOnce.Do(func() {
		s.wsGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "context_websocket_connections_active",
			Help: "WebSocket connections of GET /v1/subscribe open now."})
		if err := s.metrics.Registry().Register(s.wsGauge); err != nil {
			s.log.Warn("registering the WebSocket gauge", "error", err)
		}
	})
	return s.wsGauge
}

// ingested tells the ambient hub of items written through this server.
func (s *Server) ingested(ctx context.Context, ids []string) {
	if s.ambient != nil && len(ids) > 0 {
		s.ambient.Ingested(ctx, ids)
	}
}

// wsError is the error frame: the error shape with a type.
type wsError struct {
	Type  string     `json:"type"`
	Error *h4r.Error `json:"error"`
}

// subscribe answers GET /v1/subscribe?session_id=…: a WebSocket on which
// the client sends context_update messages and the server pushes
// precedents. A message that is not JSON or has an unknown type gets an
// error frame and the connection stays up.
func (s *Server) subscribe(c *echo.Context) error {
	if s.ambient == nil {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "ambient precedents are not configured on this server")
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	sid := c.QueryParam("session_id")
	if strings.TrimSpace(sid) == "" || len(sid) > h4r.MaxIDBytes {
		return h4r.Errorf(h4r.EINVALID, "session_id", "session_id is required, at most %d bytes", h4r.MaxIDBytes)
	}
	w, r := c.Response(), c.Request()
	// The HTTP server's read and write deadlines would end a long-lived
	// connection: clear them before the upgrade hands the connection over.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// Join before the upgrade, so that a client whose handshake completed
	// holds its place: the limits count connections in the order their
	// upgrades complete.
	sub, joinErr := s.ambient.Join(sid, spec)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		if joinErr == nil {
			s.ambient.Leave(sub)
		}
		return nil // Accept has answered the request
	}
	if joinErr != nil {
		reason := joinErr.Error()
		if le, ok := errors.AsType[*decision.LimitError](joinErr); ok {
			reason = le.Reason
		}
		conn.Close(websocket.StatusPolicyViolation, reason)
		return nil
	}
	defer s.ambient.Leave(sub)
	conn.SetReadLimit(wsReadLimit)
	gauge := s.wsConnections()
	gauge.Inc()
	defer gauge.Dec()
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go s.wsWriter(ctx, cancel, conn, sub)
	p, refused := principal(c), 0
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			conn.CloseNow()
			return nil
		}
		// Each message counts against the key's limit (rpclimit.go); a
		// client that keeps sending over it is closed.
		herr := s.allowMessage(p)
		if herr == nil {
			refused = 0
			herr = s.wsMessage(ctx, sub, typ, data)
		} else if refused++; refused > wsMaxRefused {
			conn.Close(websocket.StatusPolicyViolation, "rate limit of this key's WebSocket messages exceeded")
			return nil
		}
		if herr != nil {
			if werr := wsWrite(ctx, conn, wsError{Type: "error", Error: herr}); werr != nil {
				conn.CloseNow()
				return nil
			}
		}
	}
}

// wsMessage handles one client message; an error is sent back as a frame.
func (s *Server) wsMessage(ctx context.Context, sub *decision.Subscriber, typ websocket.MessageType, data []byte) *h4r.Error {
	if typ != websocket.MessageText {
		return h4r.Errorf(h4r.EINVALID, "", "send JSON text messages")
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return h4r.Errorf(h4r.EINVALID, "", "the message is not a JSON object: %v", err)
	}
	if probe.Type != "context_update" {
		return h4r.Errorf(h4r.EINVALID, "type", "unknown message type %q (want context_update)", probe.Type)
	}
	var u decision.ContextUpdate
	if err := jsonstrict.Decode(data, &u, ""); err != nil {
		return toError(err)
	}
	if err := s.ambient.Update(ctx, sub, u); err != nil {
		return toError(err)
	}
	return nil
}

// wsWriter sends pushes and keepalive pings until the connection ends; a
// slow client (dropped by the hub) or a failed ping closes it.
func (s *Server) wsWriter(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, sub *decision.Subscriber) {
	defer cancel()
	ping := time.NewTicker(s.pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped:
			conn.Close(websocket.StatusPolicyViolation, sub.Reason())
			return
		case p := <-sub.Out:
			if err := wsWrite(ctx, conn, p); err != nil {
				conn.CloseNow()
				return
			}
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(ctx, wsWriteTimeout)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				conn.Close(websocket.StatusPolicyViolation, "no pong within "+wsWriteTimeout.String())
				return
			}
		}
	}
}

func wsWrite(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}
