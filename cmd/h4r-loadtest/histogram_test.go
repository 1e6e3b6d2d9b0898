package main

import (
	"strings"
	"testing"
)

const exposition = `# HELP h4r_http_request_duration_seconds HTTP request duration by route pattern.
# TYPE h4r_http_request_duration_seconds histogram
h4r_http_request_duration_seconds_bucket{route="/v1/bridge",le="0.005"} 90
h4r_http_request_duration_seconds_bucket{route="/v1/bridge",le="0.05"} 99
h4r_http_request_duration_seconds_bucket{route="/v1/bridge",le="+Inf"} 100
h4r_http_request_duration_seconds_sum{route="/v1/bridge"} 1.5
h4r_http_request_duration_seconds_count{route="/v1/bridge"} 100
h4r_http_request_duration_seconds_bucket{route="/v1/bridge/trajectories",le="0.005"} 1
h4r_http_request_duration_seconds_count{route="/v1/bridge/trajectories"} 7
process_resident_memory_bytes 1.2e+08
`

func TestParseHistogram(t *testing.T) {
	tests := []struct {
		name, text, route string
		wantCount         float64
		wantUnder5ms      float64
		wantErr           string // in the error; "" for none
	}{
		{"the route's buckets and count", exposition, "/v1/bridge", 100, 0.9, ""},
		{"a route that is a prefix of another is not mixed in", exposition, "/v1/bridge/trajectories", 7, 1.0 / 7, ""},
		{"a route with no histogram", exposition, "/v1/context-pack", 0, 0, `no h4r_http_request_duration_seconds for route "/v1/context-pack"`},
		{"a value that is not a number names its line",
			"h4r_http_request_duration_seconds_count{route=\"/v1/bridge\"} many\n", "/v1/bridge", 0, 0, "line 1: value"},
		{"a bucket without le names its line",
			"# comment\nh4r_http_request_duration_seconds_bucket{route=\"/v1/bridge\"} 3\n", "/v1/bridge", 0, 0, "line 2: a bucket without le"},
		{"a line without a closing brace names its line",
			"h4r_http_request_duration_seconds_bucket{route=\"/v1/bridge\",le=\"1\" 3\n", "/v1/bridge", 0, 0, "line 1: no closing brace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseHistogram(strings.NewReader(tt.text), requestDuration, tt.route)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.count != tt.wantCount {
				t.Errorf("count = %v, want %v", h.count, tt.wantCount)
			}
			if s, ok := h.shareUnder(0.005); !ok || s != tt.wantUnder5ms {
				t.Errorf("share within 5 ms = %v, %v; want %v", s, ok, tt.wantUnder5ms)
			}
		})
	}
}

// TestHistogramSince: the phase's histogram is the difference of two
// readings, bucket by bucket.
func TestHistogramSince(t *testing.T) {
	before := histogram{buckets: map[float64]float64{0.005: 10, 0.05: 20}, count: 20}
	after := histogram{buckets: map[float64]float64{0.005: 40, 0.05: 110}, count: 120}
	d := after.since(before)
	if d.count != 100 || d.buckets[0.005] != 30 || d.buckets[0.05] != 90 {
		t.Fatalf("since = %+v, want 100 calls, 30 within 5 ms, 90 within 50 ms", d)
	}
	if s, ok := d.shareUnder(0.025); ok {
		t.Errorf("share within 25 ms = %v, but there is no such bucket", s)
	}
}

// FuzzParseHistogram: any text from /metrics gives a histogram or an
// error, never a panic.
func FuzzParseHistogram(f *testing.F) {
	f.Add(exposition, "/v1/bridge")
	f.Add("h4r_http_request_duration_seconds_bucket{route=\"/v1/bridge\",le=\"x\"} 1\n", "/v1/bridge")
	f.Add("h4r_http_request_duration_seconds_count{", "")
	f.Fuzz(func(t *testing.T, text, route string) {
		h, err := parseHistogram(strings.NewReader(text), requestDuration, route)
		if err == nil && h.buckets == nil {
			t.Fatal("no error and no buckets map")
		}
	})
}
