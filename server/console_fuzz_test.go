package server

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/h4r/h4r"
)

// FuzzConsoleForm feeds the console's forms any URL-encoded body: reading
// it never panics, an error names the form field at fault, and a
// specialist claim is always JSON the API's decoder takes.
func FuzzConsoleForm(f *testing.F) {
	f.Add("text=login+test&type=hybrid&limit=10&maxTokens=2500&w_relevance=0.5&spec_id=a&spec_level=internal&spec_groups=qa,ops")
	f.Add("limit=-1&maxBytes=x&w_trust=NaN&spec_groups=")
	f.Add("w_recency=1e400&type=causal&text=%00")
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		_, err = readQueryForm(form).request()
		if err != nil {
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Field == "" || herr.Code != h4r.EINVALID {
				t.Fatalf("form error %v does not name its field", err)
			}
		}
		if raw := readSpecForm(form, "spec_").claim(); raw != nil && !json.Valid(raw) {
			t.Fatalf("claim %q is not JSON", raw)
		}
	})
}
