package h4r

import (
	"errors"
	"fmt"
)

// Error codes: a small fixed set, each mapped to one HTTP status by
// the HTTP layer (server.HTTPStatus). Every error that crosses an API boundary carries one of them.
const (
	EINVALID     = "invalid_argument"
	ENOTFOUND    = "not_found"
	EUNAUTH      = "unauthenticated"
	EFORBIDDEN   = "permission_denied"
	EEXHAUSTED   = "resource_exhausted"
	EUNAVAILABLE = "unavailable"
	EDEADLINE    = "deadline_exceeded"
	EINTERNAL    = "internal"

	// Protocol-level refusals: the HTTP method, the body's media type, a
	// body that did not arrive in time.
	EMETHOD    = "method_not_allowed"
	EMEDIATYPE = "unsupported_media_type"
	ETIMEOUT   = "request_timeout"

	// The client closed the request (cancelled it, or dropped the
	// connection) before it was answered: not a failure of the server,
	// and nobody reads the answer. A write it interrupted was rolled
	// back whole.
	ECANCELED = "cancelled"
)

// Error is the one error shape of H4R. Field names the offending input (a
// JSON path such as "payload.query.type" or "items[3].metadata.trust") when
// the error is about input.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Error reads "field: message", the form people see in the CLI and logs;
// the code is for programs (ErrorCode, the HTTP status).
func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Errorf returns an *Error with the given code, offending field (may be
// empty) and formatted message.
func Errorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain; for
// other errors it returns "internal error" so that internals are not leaked
// to clients (they are logged instead).
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
