package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// waitErr is an error that says when to retry, as the webhook's rate
// window does.
type waitErr struct{ wait time.Duration }

func (e waitErr) Error() string             { return "limited" }
func (e waitErr) RetryAfter() time.Duration { return e.wait }
func (e waitErr) Unwrap() error             { return h4r.Errorf(h4r.EEXHAUSTED, "", "limited") }

// TestRetryAfterOnEvery429: every resource_exhausted answer carries a
// Retry-After, its error's own wait when it has one (rounded up to whole
// seconds), else the default; unavailable keeps its second.
func TestRetryAfterOnEvery429(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"exhausted without a wait", h4r.Errorf(h4r.EEXHAUSTED, "", "the index is full"), "60"},
		{"exhausted with its wait", waitErr{1200 * time.Millisecond}, "2"},
		{"a wait under a second", waitErr{time.Millisecond}, "1"},
		{"unavailable", h4r.Errorf(h4r.EUNAVAILABLE, "", "busy"), "1"},
		{"invalid", h4r.Errorf(h4r.EINVALID, "", "bad"), ""},
	}
	for _, tc := range cases {
		if got := retryAfter(tc.err, toError(tc.err).Code); got != tc.want {
			t.Errorf("%s: Retry-After %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzBatchLen: any body is measured without a panic, and a JSON array
// is counted as its elements.
func FuzzBatchLen(f *testing.F) {
	for _, s := range []string{`[]`, `[{"id":1}]`, ` [1,2,3]`, `{"jsonrpc":"2.0"}`, `[`, "\n[{}, {}]", `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n := batchLen(body)
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && n != len(arr) {
			t.Fatalf("batchLen(%q) = %d, want %d", body, n, len(arr))
		}
	})
}
