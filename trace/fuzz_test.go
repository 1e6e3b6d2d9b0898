package trace_test

import (
	"context"
	"os"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

// FuzzDecode: any bytes decode to a trace or an invalid_argument error,
// never a panic; a decoded trace validates or names its field.
func FuzzDecode(f *testing.F) {
	b, err := os.ReadFile("testdata/trace.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"sha":"abcdef1","repo":"a/b","timestamp":"2026-01-01T00:00:00Z","decisions":[{"context":"c","options":[{"description":"x"}],"selected":3}]}`))
	f.Add([]byte(`{"sha":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Decode(data)
		if err != nil {
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("Decode error %v is not invalid_argument", err)
			}
			return
		}
		tr.Normalize()
		if err := tr.Validate(); err != nil {
			if e, ok := err.(*h4r.Error); !ok || e.Code != h4r.EINVALID || e.Field == "" {
				t.Fatalf("Validate error %v does not name a field", err)
			}
			return
		}
		if _, err := trace.Items(tr); err != nil {
			t.Fatalf("a valid trace does not map to items: %v", err)
		}
	})
}

// FuzzGitHubWebhook: any body of a pull_request or push delivery is
// applied or refused as invalid_argument, never a panic or an internal
// error.
func FuzzGitHubWebhook(f *testing.F) {
	for _, name := range []string{"pull_request_merged", "push", "push_revert", "push_other_branch"} {
		b, err := os.ReadFile("testdata/github/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"ref":"refs/heads/main","repository":{"full_name":"a/b","default_branch":"main"},"commits":[{"id":"abcdef1","message":"This reverts commit 1234567."}]}`))
	f.Add([]byte(`{"action":"closed","pull_request":{"merged":true,"head":{}},"repository":{"full_name":"a/b"}}`))
	h := newHarness(f)
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, event := range []string{"pull_request", "push"} {
			n++
			_, err := h.svc.HandleGitHub(context.Background(), event, "fuzz-"+string(rune('a'+n%26)), body)
			if err != nil && h4r.ErrorCode(err) != h4r.EINVALID && h4r.ErrorCode(err) != h4r.EEXHAUSTED {
				t.Fatalf("%s: %v", event, err)
			}
		}
	})
}

// FuzzDecodeFromBus: any bytes from the bus decode to a trace (with the
// names of the fields left out, none of them known) or an invalid_argument
// error, never a panic; what Decode accepts, it accepts alike.
func FuzzDecodeFromBus(f *testing.F) {
	b, err := os.ReadFile("testdata/trace.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"sha":"abcdef1","repo":"a/b","timestamp":"2026-01-01T00:00:00Z","session_id":"s1"}`))
	f.Add([]byte(`{"sha":"abcdef1","session_id":1,"session_id":2}`))
	f.Add([]byte(`{"sha":1,"x":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, unknown, err := trace.DecodeFromBus(data)
		if err != nil {
			if h4r.ErrorCode(err) != h4r.EINVALID {
				t.Fatalf("DecodeFromBus error %v is not invalid_argument", err)
			}
			return
		}
		if tr == nil {
			t.Fatal("no trace and no error")
		}
		if strict, serr := trace.Decode(data); serr == nil && (len(unknown) != 0 || strict.SHA != tr.SHA) {
			t.Fatalf("a strictly valid trace decoded differently: unknown %v", unknown)
		}
	})
}
