package server

import (
	"net/http"
	"strconv"

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
// queue at once. (resource_exhausted sets its own, from the rate limit.)
const RetryAfterUnavailable = 1

// retryAfter returns the Retry-After header of an error code whose answer
// says to retry later, or "".
func retryAfter(code string) string {
	if code == h4r.EUNAVAILABLE {
		return strconv.Itoa(RetryAfterUnavailable)
	}
	return ""
}
