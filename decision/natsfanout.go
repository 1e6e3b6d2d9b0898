package decision

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// DefaultFanoutSubject is the NATS subject the ambient fan-out uses.
const DefaultFanoutSubject = "h4r.ambient.ingested"

// NATSFanout carries ingested item ids between replicas over core NATS:
// every replica publishes what it ingested and hears what all did. It is
// at-most-once, as ambient pushes are a hint: a replica that misses a
// message misses one push, never data.
type NATSFanout struct {
	nc      *nats.Conn
	subject string
}

// NewNATSFanout returns a fan-out over nc on subject ("" for
// DefaultFanoutSubject).
func NewNATSFanout(nc *nats.Conn, subject string) *NATSFanout {
	if subject == "" {
		subject = DefaultFanoutSubject
	}
	return &NATSFanout{nc: nc, subject: subject}
}

type fanoutMessage struct {
	IDs []string `json:"ids"`
}

// Publish sends the ids to every replica.
func (f *NATSFanout) Publish(_ context.Context, ids []string) error {
	b, err := json.Marshal(fanoutMessage{IDs: ids})
	if err != nil {
		return fmt.Errorf("encoding ingested ids: %w", err)
	}
	if err := f.nc.Publish(f.subject, b); err != nil {
		return fmt.Errorf("publishing ingested ids on %s: %w", f.subject, err)
	}
	return nil
}

// Subscribe calls fn with the ids of each message; a message that is not
// the expected JSON is skipped.
func (f *NATSFanout) Subscribe(fn func(ids []string)) (func() error, error) {
	sub, err := f.nc.Subscribe(f.subject, func(m *nats.Msg) {
		var msg fanoutMessage
		if json.Unmarshal(m.Data, &msg) == nil && len(msg.IDs) > 0 {
			fn(msg.IDs)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", f.subject, err)
	}
	if err := f.nc.Flush(); err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", f.subject, err)
	}
	return sub.Unsubscribe, nil
}
