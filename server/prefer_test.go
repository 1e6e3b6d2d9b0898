package server

import (
	"net/http"
	"testing"
)

// Any Prefer header parses without panicking, and "busy=503" added as a
// preference of its own is always found among whatever else it holds.
func FuzzPrefersBusy503(f *testing.F) {
	for _, seed := range []string{"", "busy=503", `busy="503"`, "return=minimal; x", ",,;=", "busy", "BUSY = 503 ; a=b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prefer string) {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.Header.Add(preferHeader, prefer)
		_ = prefersBusy503(r)
		r.Header.Add(preferHeader, "busy=503")
		if !prefersBusy503(r) {
			t.Fatalf("busy=503 after %q not found", prefer)
		}
	})
}
