package h4r

import "encoding/json"

// Envelope message types.
const (
	TypeContextRequest = "ContextRequest"
	TypeContextResult  = "ContextResult"
	TypeContextError   = "ContextError"
)

// Envelope is an agent-to-agent message: a ContextRequest in, a
// ContextResult or ContextError out.
type Envelope struct {
	Meta    EnvelopeMeta    `json:"meta"`
	Payload json.RawMessage `json:"payload"`
}

// EnvelopeMeta identifies a message, its sender and what it answers.
type EnvelopeMeta struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	From      *Specialist `json:"from,omitempty"`
	ReplyTo   string      `json:"reply_to,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}
