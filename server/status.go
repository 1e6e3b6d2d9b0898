package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/h4r/h4r"
)

// HTTPStatus returns the HTTP status for an error code (500 for unknown
// codes). This switch is the single table from code to status; the root
// package knows codes, not HTTP.
func HTTPStatus(code string) int {
	switch code {
	case h4r.EINVALID:
		return http.StatusBadRequest
	case h4r.ENOTFOUND:
		return http.StatusNotFound
	case h4r.EUNAUTH:
		return http.StatusUnauthorized
	case h4r.EFORBIDDEN:
		return http.StatusForbidden
	case h4r.EEXHAUSTED:
		return http.StatusTooManyRequests
	case h4r.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case h4r.EDEADLINE:
		return http.StatusGatewayTimeout
	case h4r.EMETHOD:
		return http.StatusMethodNotAllowed
	case h4r.EMEDIATYPE:
		return http.StatusUnsupportedMediaType
	case h4r.ETIMEOUT:
		return http.StatusRequestTimeout
	case h4r.ECANCELED:
		return StatusClientClosedRequest
	default:
		return http.StatusInternalServerError
	}
}

// StatusClientClosedRequest is nginx's non-standard 499 "client closed
// request": the status the access log and the request metrics record for a
// request its client cancelled before the answer. No client ever reads it.
const StatusClientClosedRequest = 499

// RetryAfterUnavailable is the Retry-After, in seconds, of an unavailable
// answer: the store was busy with writes and this one passed its deadline
// (H4R_WRITE_TIMEOUT). A burst of writes drains in about that long;
// clients that wait it out spread their retries instead of joining the
// queue at once.
const RetryAfterUnavailable = 1

// RetryAfterExhausted is the Retry-After, in seconds, of a
// resource_exhausted answer whose error does not say when to retry (every
// 429 carries one): a rate limit's own wait is set where it is known.
const RetryAfterExhausted = 60

// retryAfter returns the Retry-After header of an error whose answer says
// to retry later, or "": the error's own wait (a RetryAfter method in its
// chain, as the webhook's rate window has), else the code's default.
func retryAfter(err error, code string) string {
	if ra, ok := errors.AsType[interface {
		error
		RetryAfter() time.Duration
	}](err); ok {
		return strconv.Itoa(retrySeconds(ra.RetryAfter()))
	}
	switch code {
	case h4r.EUNAVAILABLE:
		return strconv.Itoa(RetryAfterUnavailable)
	case h4r.EEXHAUSTED:
		return strconv.Itoa(RetryAfterExhausted)
	}
	return ""
}
