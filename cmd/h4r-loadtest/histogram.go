package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The server's own view of the concurrent phase: its request-duration
// histogram for the route under load (h4r_http_request_duration_seconds,
// read from /metrics before and after the phase). A call's time there runs
// from the handler's first middleware to its answer, so it leaves out the
// wait for the connection to be read and the client's own process, which
// share the cores when the load runs on the server's machine.

// requestDuration is the histogram's name in /metrics.
const requestDuration = "h4r_http_request_duration_seconds"

// histogram is one route's cumulative bucket counts by upper bound
// (seconds), and its count of observations.
type histogram struct {
	buckets map[float64]float64
	count   float64
}

// parseHistogram reads the Prometheus text exposition r and returns
// metric's histogram for the label route="route". A line it cannot read
// is an error naming the line.
func parseHistogram(r io.Reader, metric, route string) (histogram, error) {
	h := histogram{buckets: map[float64]float64{}}
	routeLabel := `route="` + route + `"`
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		name, rest, ok := strings.Cut(text, "{")
		if !ok || (name != metric+"_bucket" && name != metric+"_count") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return histogram{}, fmt.Errorf("/metrics line %d: no closing brace before the value: %q", line, text)
		}
		if !hasLabel(labels, routeLabel) {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value + " ")[0], 64)
		if err != nil {
			return histogram{}, fmt.Errorf("/metrics line %d: value: %w", line, err)
		}
		found = true
		if name == metric+"_count" {
			h.count = v
			continue
		}
		le, ok := labelValue(labels, "le")
		if !ok {
			return histogram{}, fmt.Errorf("/metrics line %d: a bucket without le: %q", line, text)
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return histogram{}, fmt.Errorf("/metrics line %d: le: %w", line, err)
		}
		h.buckets[bound] = v
	}
	if err := sc.Err(); err != nil {
		return histogram{}, fmt.Errorf("reading /metrics: %w", err)
	}
	if !found {
		return histogram{}, fmt.Errorf("/metrics has no %s for route %q", metric, route)
	}
	return h, nil
}

// hasLabel reports whether the comma-separated labels hold label (name="value") whole.
func hasLabel(labels, label string) bool {
	for _, l := range strings.Split(labels, ",") {
		if l == label {
			return true
		}
	}
	return false
}

// labelValue is the unquoted value of label name in labels.
func labelValue(labels, name string) (string, bool) {
	for _, l := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// since is h minus an earlier reading of the same histogram.
func (h histogram) since(before histogram) histogram {
	d := histogram{buckets: map[float64]float64{}, count: h.count - before.count}
	for le, n := range h.buckets {
		d.buckets[le] = n - before.buckets[le]
	}
	return d
}

// shareUnder is the share of observations at or under bound seconds, and
// false when bound is not one of the histogram's bucket bounds.
func (h histogram) shareUnder(bound float64) (float64, bool) {
	n, ok := h.buckets[bound]
	if !ok || h.count == 0 {
		return 0, false
	}
	return n / h.count, true
}

// serverHistogram reads the route's request-duration histogram from the
// server's /metrics (admin: give --key when the server has keys).
func (lt *loadTest) serverHistogram(ctx context.Context, route string) (histogram, error) {
	res, err := lt.getMetrics(ctx)
	if err != nil {
		return histogram{}, fmt.Errorf("reading /metrics: %w", err)
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return histogram{}, fmt.Errorf("reading /metrics: %s (give --key a key allowed /metrics)", res.Status)
	default:
		return histogram{}, fmt.Errorf("reading /metrics: %s", res.Status)
	}
	h, err := parseHistogram(res.Body, requestDuration, route)
	if err != nil {
		return histogram{}, fmt.Errorf("the server's latency histogram: %w", err)
	}
	return h, nil
}

// printServerShares writes the shares of the phase's calls the server
// answered within 5, 25 and 50 ms by its own histogram.
func printServerShares(out io.Writer, label string, h histogram) {
	var parts []string
	for _, ms := range []float64{5, 25, 50} {
		if s, ok := h.shareUnder(ms / 1000); ok {
			parts = append(parts, fmt.Sprintf("%.2f%% within %g ms", 100*s, ms))
		}
	}
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(out, "%s, by the server's own histogram (handler only): %s of %.0f calls\n", label, strings.Join(parts, ", "), h.count)
}
