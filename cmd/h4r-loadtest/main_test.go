package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/app"
	h4rconfig "github.com/h4r/h4r/config"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/server"
)

// The load test against the real service: with an ingest share, the
// concurrent phase sends both packs and ingests, reports them apart, and
// every ingest it counts as 200 is in the store.
func TestIngestShare(t *testing.T) {
	cfg := h4rconfig.Default()
	cfg.DataDir = t.TempDir()
	// Generous, so that a slow -race run never degrades a pack.
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ts := httptest.NewServer(server.New(a.Engine, a.Store, server.WithLogger(slog.New(slog.DiscardHandler)),
		server.WithRequestTimeout(cfg.RequestTimeout)).Handler())
	t.Cleanup(ts.Close)

	c := config{
		addr: strings.TrimPrefix(ts.URL, "http://"), items: 40, batch: 7, senders: 3, single: 5, clients: 4, requests: 40,
		maxDuration: time.Minute, limit: 5, qtype: "keyword", seed: 3, ingestShare: 0.5, ingestBatch: 3,
	}
	var out bytes.Buffer
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	ingests := regexp.MustCompile(`(?m)^ingests\s+(\d+) requests.*statuses map\[200:(\d+)\]`).FindStringSubmatch(report)
	packs := regexp.MustCompile(`(?m)^packs ok: (\d+) of (\d+)`).FindStringSubmatch(report)
	if ingests == nil || packs == nil {
		t.Fatalf("the report does not give the ingests (all 200) and the packs ok apart:\n%s", report)
	}
	nIngests, _ := strconv.Atoi(ingests[1])
	nPacks, _ := strconv.Atoi(packs[2])
	if nIngests == 0 || nPacks == 0 || nIngests+nPacks != c.requests {
		t.Errorf("%d ingests and %d packs, want both, %d in all:\n%s", nIngests, nPacks, c.requests, report)
	}
	if n, err := a.Store.Count(t.Context()); err != nil || n != c.items+nIngests*c.ingestBatch {
		t.Errorf("the store holds %d items (%v), want %d loaded and %d×%d ingested", n, err, c.items, nIngests, c.ingestBatch)
	}
}

// The bridge's load against the real service with the bridge on: the
// trajectories are stored as items of kind trajectory, and every call is
// answered with a context_bridge that is not degraded.
func TestBridgeLoad(t *testing.T) {
	cfg := h4rconfig.Default()
	cfg.DataDir = t.TempDir()
	cfg.BridgeEnabled = true
	cfg.GeneratorTimeout, cfg.RequestTimeout, cfg.BridgeTimeout = 30*time.Second, 30*time.Second, 30*time.Second
	quiet := slog.New(slog.DiscardHandler)
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := a.Bridge(quiet)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithBridge(b),
		server.WithMetrics(metrics.New())).Handler())
	t.Cleanup(ts.Close)

	c := config{
		addr: strings.TrimPrefix(ts.URL, "http://"), items: 60, batch: 25, senders: 2, single: 5, clients: 4, requests: 30,
		maxDuration: time.Minute, qtype: "bridge", seed: 5, ingestShare: 0.2, ingestBatch: 2,
	}
	var out bytes.Buffer
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	packs := regexp.MustCompile(`(?m)^packs ok: (\d+) of (\d+)`).FindStringSubmatch(report)
	ingests := regexp.MustCompile(`(?m)^ingests\s+(\d+) requests.*statuses map\[200:(\d+)\]`).FindStringSubmatch(report)
	if packs == nil || packs[1] != packs[2] || ingests == nil {
		t.Fatalf("want every call answered with a context_bridge and the ingests all 200:\n%s", report)
	}
	nIngests, _ := strconv.Atoi(ingests[1])
	if n, err := a.Store.Count(t.Context()); err != nil || n != c.items+nIngests*c.ingestBatch {
		t.Errorf("the store holds %d trajectories (%v), want %d loaded and %d×%d ingested", n, err, c.items, nIngests, c.ingestBatch)
	}
	// The server's own count of the phase's calls on the bridge's route:
	// the calls, not the warm-up, the single client or the ingests.
	server := regexp.MustCompile(`(?m)^4 clients, by the server's own histogram \(handler only\): .*within 50 ms of (\d+) calls$`).FindStringSubmatch(report)
	if server == nil || server[1] != packs[2] {
		t.Errorf("want the server's histogram to count the phase's %s bridge calls:\n%s", packs[2], report)
	}
}

func TestFlagsRejected(t *testing.T) {
	tests := []struct {
		name string
		c    config
		want string
	}{
		{"remote address", config{addr: "10.0.0.1:8080", ingestBatch: 10}, "not a loopback address"},
		{"ingest share of one", config{addr: "127.0.0.1:8080", ingestShare: 1, ingestBatch: 10}, "--ingest-share"},
		{"negative ingest share", config{addr: "127.0.0.1:8080", ingestShare: -0.1, ingestBatch: 10}, "--ingest-share"},
		{"empty ingest batch", config{addr: "127.0.0.1:8080", ingestShare: 0.2}, "--ingest-batch"},
		{"too many senders", config{addr: "127.0.0.1:8080", ingestBatch: 10, senders: 65}, "--senders"},
		{"unknown type", config{addr: "127.0.0.1:8080", ingestBatch: 10, qtype: "fuzzy"}, "--type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.c, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run: %v, want an error about %s", err, tt.want)
			}
		})
	}
}
