package metrics_test

import (
	"testing"

	"github.com/h4r/h4r/metrics"
)

// gather sums a metric's samples over its series whose labels include
// every name=value pair in labels: counter values, or a histogram's
// observation count. series is how many series matched.
func gather(t *testing.T, m *metrics.Metrics, name string, labels ...string) (sum float64, series int) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			series++
			switch {
			case s.Counter != nil:
				sum += s.Counter.GetValue()
			case s.Gauge != nil:
				sum += s.Gauge.GetValue()
			case s.Histogram != nil:
				sum += float64(s.Histogram.GetSampleCount())
			}
		}
	}
	return sum, series
}
