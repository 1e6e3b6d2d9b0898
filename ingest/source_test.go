package ingest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/ingest"
)

// TestRequestValidateSchedule: opts.schedule, which the retrieval contract names
// without defining, is refused with an error naming the field and saying
// what to do instead, whatever its value; without it the request passes.
func TestRequestValidateSchedule(t *testing.T) {
	src := []ingest.Source{{Type: ingest.TypeFS, Path: "/srv/repo"}}
	for _, tc := range []struct {
		name     string
		schedule string
		refused  bool
	}{
		{"no schedule", "", false},
		{"an interval", "1h", true},
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
			if !errors.As(err, &herr) || herr.Code != h4r.EINVALID || herr.Field != "opts.schedule" || !strings.Contains(herr.Message, "cron") {
				t.Fatalf("err = %v, want invalid on opts.schedule pointing to cron", err)
			}
		})
	}
}
