package auth_test

import (
	"testing"
	"time"

	"github.com/h4r/h4r/auth"
)

// TestLimiterAllowN: a batch takes its calls all at once or none of them
// (a refused batch leaves the bucket as it was), and a batch larger than
// the bucket is never allowed.
func TestLimiterAllowN(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	k, err := auth.Parse([]byte(`[{"sha256": "` + auth.Hash("a") + `", "principal": {"id": "a"}, "routes": ["read"], "rateLimitPerMinute": 5}]`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := k.Authenticate("a")
	l := auth.NewLimiter(60)
	steps := []struct {
		name  string
		n     int
		at    time.Duration
		ok    bool
		retry time.Duration
	}{
		{"3 of 5", 3, 0, true, 0},
		{"3 more are refused whole: 1 missing, in 12s", 3, 0, false, 12 * time.Second},
		{"the refusal took nothing: 2 pass", 2, 0, true, 0},
		{"6, more than the bucket, never", 6, time.Hour, false, time.Minute},
		{"nothing is free", 0, 0, true, 0},
	}
	for _, s := range steps {
		ok, retry := l.AllowN(a, auth.RouteMCP, t0.Add(s.at), s.n)
		if ok != s.ok || retry != s.retry {
			t.Errorf("%s: AllowN = %v, %v; want %v, %v", s.name, ok, retry, s.ok, s.retry)
		}
	}
}
