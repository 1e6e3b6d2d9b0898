package server

import (
	"net/http"

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
	default:
		return http.StatusInternalServerError
	}
}
