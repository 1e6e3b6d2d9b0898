package server

import (
	"net/http"
	"strings"
)

// Busy answers. By default a context request that finds every pack slot
// taken gets an empty degraded pack (200) that says the server was busy:
// an agent always gets a pack. A caller that would rather retry sends
// "Prefer: busy=503" (RFC 7240's Prefer header) and gets 503 with
// Retry-After instead, and Preference-Applied says so.
const (
	preferHeader    = "Prefer"
	preferBusy      = "busy"
	preferBusy503   = "503"
	preferAppliedHd = "Preference-Applied"
)

// prefersBusy503 reports whether r asks for 503 rather than an empty pack
// when the server is busy. Prefer holds comma-separated preferences, each
// token[=value] with optional ";" parameters; names are case-insensitive
// and a value may be quoted. Preferences it does not know are ignored, as
// RFC 7240 asks.
func prefersBusy503(r *http.Request) bool {
	for _, line := range r.Header.Values(preferHeader) {
		for pref := range strings.SplitSeq(line, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, _ := strings.Cut(pref, "=")
			if strings.EqualFold(strings.TrimSpace(name), preferBusy) &&
				strings.Trim(strings.TrimSpace(value), `"`) == preferBusy503 {
				return true
			}
		}
	}
	return false
}
