package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// FuzzA2AV1Message: whatever a 1.0 SendMessage carries, reading it never
// panics, and what cannot be read is invalid params.
func FuzzA2AV1Message(f *testing.F) {
	for _, seed := range []string{
		`{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "login"}]}}`,
		`{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"query": {"text": "x"}, "limit": 1}}]}}`,
		`{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"url": "https://x", "mediaType": "text/plain"}, {"raw": "aGk="}]}}`,
		`{"message": {"role": "ROLE_USER", "parts": [{"data": [1, 2]}, {}]}}`,
		`{"message": {"role": 1, "parts": null}}`,
		`{"message": null}`,
		`{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"query": {"text": "x"}, "specialist": {"id": "root"}}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p v1SendRequest
		if err := decodeParams(body, &p); err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("decode error %v is not invalid params", err)
			}
			return
		}
		msg, err := p.Message.toA2A()
		if err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("read error %v is not invalid params", err)
			}
			return
		}
		if _, err := a2aRequest(msg); err != nil && !errors.Is(err, a2a.ErrInvalidParams) {
			t.Fatalf("request error %v is not invalid params", err)
		}
		// What was read encodes back to a 1.0 message.
		if _, err := json.Marshal(v1MessageOf(msg)); err != nil {
			t.Fatalf("encoding the message back: %v", err)
		}
	})
}
