package ingest_test

import (
	"errors"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/ingest"
)

// TestRequestValidateSchedule: opts.schedule is a Go duration from a
// minute to 366 days; anything else is refused naming the field.
func TestRequestValidateSchedule(t *testing.T) {
	src := []ingest.Source{{Type: ingest.TypeFS, Path: "/srv/repo"}}
	for _, tc := range []struct {
		name     string
		schedule string
		refused  bool
	}{
		{"no schedule", "", false},
		{"an interval", "1h", false},
		{"a day", "24h", false},
		{"too often", "10s", true},
		{"a cron expression", "*/5 * * * *", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ingest.Request{Sources: src, Opts: ingest.Options{Schedule: tc.schedule}}.Validate()
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != h4r.EINVALID || herr.Field != "opts.schedule" {
				t.Fatalf("err = %v, want invalid on opts.schedule", err)
			}
		})
	}
}
