package trace_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/h4r/h4r/trace"
)

func TestMetricsCountIngestsAndSearches(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, trace.WithMetrics(trace.NewMetrics(reg)))
	h.ingest(t, fixture(t))
	if _, err := h.svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "rate limiting"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"context_traces_ingested_total":     1,
		"context_decisions_extracted_total": 2,
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "context_traces_ingested_total":
			l := f.GetMetric()[0].GetLabel()
			got := map[string]string{}
			for _, p := range l {
				got[p.GetName()] = p.GetValue()
			}
			if got["repo"] != "acme/gateway" || got["mode"] != "classic" || got["status"] != "pending" {
				t.Errorf("labels %v", got)
			}
			if v := f.GetMetric()[0].GetCounter().GetValue(); v != want[f.GetName()] {
				t.Errorf("%s = %v", f.GetName(), v)
			}
		case "context_decisions_extracted_total":
			if v := f.GetMetric()[0].GetCounter().GetValue(); v != want[f.GetName()] {
				t.Errorf("%s = %v", f.GetName(), v)
			}
		case "context_search_duration_seconds":
			if n := f.GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
				t.Errorf("search observed %d times, want 1", n)
			}
		}
	}
	if n := testutil.CollectAndCount(reg, "context_search_duration_seconds", "context_traces_ingested_total", "context_decisions_extracted_total"); n != 3 {
		t.Fatalf("%d of the document's metrics have samples, want 3", n)
	}
}
