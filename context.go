package h4r

import "context"

// RedactionMarker replaces every redacted value (scs.WithRedactionMarker
// can set another); the slicer writes it and the pack builder recognises
// it, so both must agree.
const RedactionMarker = "[REDACTED]"

// requestIDKey is the context key of the request id.
type requestIDKey struct{}

// WithRequestID returns a context carrying the request id. The server sets
// it from X-Request-Id; logs, the decision log and packs read it back with
// RequestID.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id WithRequestID put on ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
