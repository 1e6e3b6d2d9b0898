package server

import (
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/labstack/echo/v5"
)

// serveV03 answers a 0.3 method: params and results are the a2a-go SDK's
// types, which are the 0.3 wire shapes.
func (a *a2aService) serveV03(c *echo.Context, caller a2aCaller, req rpcRequest) error {
	ctx, w := c.Request().Context(), c.Response()
	fail := func(err error) error { return a.reply(w, req.ID, nil, a.rpcErrorOf(ctx, err, false)) }
	switch req.Method {
	case "message/send":
		var p a2a.MessageSendParams
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		t, err := a.send(ctx, caller, p.Message, nil)
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, trimHistory(t, historyOf(p.Config)), nil)
	case "message/stream", "tasks/resubscribe":
		stream := &sseStream{w: w, id: req.ID}
		emit := func(ev a2a.Event) error { return stream.send(ev, nil) }
		var err error
		if req.Method == "message/stream" {
			var p a2a.MessageSendParams
			if err = decodeParams(req.Params, &p); err == nil {
				_, err = a.send(ctx, caller, p.Message, emit)
			}
		} else {
			var p a2a.TaskIDParams
			if err = decodeParams(req.Params, &p); err == nil {
				err = a.subscribe(ctx, caller, p.ID, emit)
			}
		}
		if err != nil && ctx.Err() == nil {
			return stream.send(nil, a.rpcErrorOf(ctx, err, false))
		}
		stream.start()
		return nil
	case "tasks/get":
		var p a2a.TaskQueryParams
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		t, err := a.get(ctx, caller, p.ID)
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, trimHistory(t, p.HistoryLength), nil)
	case "tasks/cancel":
		var p a2a.TaskIDParams
		if err := decodeParams(req.Params, &p); err != nil {
			return fail(err)
		}
		t, err := a.cancel(caller, p.ID)
		if err != nil {
			return fail(err)
		}
		return a.reply(w, req.ID, t, nil)
	case "agent/getAuthenticatedExtendedCard":
		return fail(fmt.Errorf("%w: the card at %s is the only one", a2a.ErrAuthenticatedExtendedCardNotConfigured, a2aCardPath))
	}
	return fail(fmt.Errorf("%w: the card does not offer push notifications", a2a.ErrPushNotificationNotSupported))
}

// decodeParams decodes a method's params; what does not decode is invalid
// params, with the reason.
func decodeParams(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%w: params: %v", a2a.ErrInvalidParams, err)
	}
	return nil
}

func historyOf(c *a2a.MessageSendConfig) *int {
	if c == nil {
		return nil
	}
	return c.HistoryLength
}

// trimHistory keeps the last n messages of t's history (all when n is nil).
func trimHistory(t a2a.Task, n *int) *a2a.Task {
	if n != nil && *n >= 0 && len(t.History) > *n {
		t.History = t.History[len(t.History)-*n:]
	}
	return &t
}
