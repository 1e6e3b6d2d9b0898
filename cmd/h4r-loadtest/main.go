package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r/internal/procmem"
)

type config struct {
	addr        string
	key         string
	items       int
	batch       int
	senders     int
	single      int
	clients     int
	requests    int
	maxDuration time.Duration
	think       time.Duration
	limit       int
	qtype       string
	pid         int
	seed        uint64
	ingestShare float64
	ingestBatch int
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:8080", "server address (loopback only)")
	flag.StringVar(&c.key, "key", "", "API key, when the server has keys (it should then give this key a rateLimitPerMinute above the load)")
	flag.IntVar(&c.items, "items", 0, "synthetic items to ingest first (0: use the store as it is)")
	flag.IntVar(&c.batch, "batch", 1000, "items per ingest request")
	flag.IntVar(&c.senders, "senders", 1, "ingest requests in flight while loading the --items (a server decodes one batch while it writes another)")
	flag.IntVar(&c.single, "single", 200, "requests of the single-client phase")
	flag.IntVar(&c.clients, "clients", 100, "concurrent clients of the second phase")
	flag.IntVar(&c.requests, "requests", 2000, "requests of the concurrent phase, all clients together")
	flag.DurationVar(&c.maxDuration, "max-duration", 3*time.Minute, "bound of each measuring phase")
	flag.DurationVar(&c.think, "think", 0, "pause of each concurrent client between its requests (0: closed loop, as fast as answers come)")
	flag.IntVar(&c.limit, "limit", 10, "limit of each context request")
	flag.StringVar(&c.qtype, "type", "hybrid", "query type: hybrid (full-text and vectors), keyword (full-text only), semantic; or bridge: trajectories and tool calls of the context bridge (the server needs H4R_BRIDGE_ENABLED=true)")
	flag.IntVar(&c.pid, "pid", 0, "server process id, to read its peak RSS (VmHWM) from /proc; without it RSS comes from /metrics when readable")
	flag.Uint64Var(&c.seed, "seed", 1, "random seed of items and queries")
	flag.Float64Var(&c.ingestShare, "ingest-share", 0, "share of the concurrent phase's requests that are ingests of --ingest-batch new items, in [0, 1)")
	flag.IntVar(&c.ingestBatch, "ingest-batch", 10, "items per ingest request of the concurrent phase")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "h4r-loadtest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %s is not a loopback address: the load test runs on one machine only", c.addr)
	}
	if c.ingestShare < 0 || c.ingestShare >= 1 {
		return fmt.Errorf("--ingest-share %v: want a share in [0, 1)", c.ingestShare)
	}
	if c.senders == 0 {
		c.senders = 1
	}
	if c.senders < 1 || c.senders > 64 {
		return fmt.Errorf("--senders %d: want 1 to 64 requests in flight", c.senders)
	}
	if c.ingestBatch < 1 || c.ingestBatch > 1000 {
		return fmt.Errorf("--ingest-batch %d: want 1 to 1000 items", c.ingestBatch)
	}
	switch c.qtype {
	case "hybrid", "keyword", "semantic", "bridge":
	default:
		return fmt.Errorf("--type %q: want hybrid, keyword, semantic or bridge", c.qtype)
	}
	base := "http://" + c.addr
	// One connection per client, kept alive: the test measures the server,
	// not TCP handshakes.
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: c.clients + 1, MaxConnsPerHost: c.clients + 1}}
	lt := &loadTest{c: c, base: base, client: client, rng: rand.New(rand.NewPCG(c.seed, 42))}

	if c.items > 0 {
		t0 := time.Now()
		if err := lt.ingest(ctx, out); err != nil {
			return err
		}
		fmt.Fprintf(out, "ingested %d items in %s (%.0f items/s)\n", c.items, time.Since(t0).Round(time.Millisecond), float64(c.items)/time.Since(t0).Seconds())
	}
	rss := lt.watchRSS(ctx)

	fmt.Fprintln(out, "warm-up: 20 requests")
	lt.phase(ctx, 1, 20, c.maxDuration, 0, 0)

	one, _ := lt.phase(ctx, 1, c.single, c.maxDuration, 0, 0)
	one.print(out, "1 client")
	route := "/v1/context-pack"
	if c.qtype == "bridge" {
		route = "/v1/bridge"
	}
	before, histErr := lt.serverHistogram(ctx, route)
	many, ingests := lt.phase(ctx, c.clients, c.requests, c.maxDuration, c.think, c.ingestShare)
	many.print(out, fmt.Sprintf("%d clients", c.clients))
	if histErr == nil {
		var after histogram
		if after, histErr = lt.serverHistogram(ctx, route); histErr == nil {
			printServerShares(out, fmt.Sprintf("%d clients", c.clients), after.since(before))
		}
	}
	if histErr != nil {
		fmt.Fprintf(out, "server-side latency: unknown (%v)\n", histErr)
	}
	if c.ingestShare > 0 {
		ingests.print(out, "ingests")
	}

	peak := rss()
	if peak > 0 {
		fmt.Fprintf(out, "server peak RSS: %.0f MB\n", float64(peak)/(1<<20))
	} else {
		fmt.Fprintln(out, "server peak RSS: unknown (give --pid, or a key allowed /metrics)")
	}
	p1, pN := one.percentile(95), many.percentile(95)
	target, okTarget := "2", ""
	if c.ingestShare > 0 {
		target, okTarget = "3 with ingest", " (target >= 95%)"
	}
	fmt.Fprintf(out, "p95 ratio (%d clients / 1 client): %.2f (target <= %s)\n", c.clients, float64(pN)/float64(p1), target)
	fmt.Fprintf(out, "packs ok: %d of %d (%.1f%%)%s\n", many.ok, len(many.latencies), 100*many.okShare(), okTarget)
	fmt.Fprintf(out, "errors: %d (target 0); peak RSS target <= 500 MB\n", one.errors()+many.errors())
	if c.qtype == "bridge" && one.ok+many.ok == 0 {
		return errors.New("no answer held a context_bridge: start the server with H4R_BRIDGE_ENABLED=true")
	}
	return nil
}

type loadTest struct {
	c      config
	base   string
	client *http.Client
	mu     sync.Mutex
	rng    *rand.Rand
	live   int // items the concurrent phase ingested so far (under mu)
}

// result is one phase's outcome.
type result struct {
	latencies []time.Duration
	statuses  map[int]int
	transport int // requests that got no answer
	degraded  int // packs answered 200 with status degraded
	ok        int // packs answered 200 with status ok
	elapsed   time.Duration
}

// okShare is the share of answered requests that were ok packs.
func (r *result) okShare() float64 {
	if len(r.latencies) == 0 {
		return 0
	}
	return float64(r.ok) / float64(len(r.latencies))
}

func (r *result) errors() int {
	n := r.transport
	for s, c := range r.statuses {
		if s != http.StatusOK {
			n += c
		}
	}
	return n
}

func (r *result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	i := int(float64(len(l))*p/100+0.5) - 1
	return l[min(max(i, 0), len(l)-1)]
}

func (r *result) print(out io.Writer, name string) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	fmt.Fprintf(out, "%-12s %5d requests in %6.1fs (%.1f req/s): p50 %s ms, p95 %s ms, p99 %s ms, max %s ms; statuses %v, no answer %d, ok packs %d, degraded packs %d\n",
		name, len(r.latencies), r.elapsed.Seconds(), float64(len(r.latencies))/r.elapsed.Seconds(),
		ms(r.percentile(50)), ms(r.percentile(95)), ms(r.percentile(99)), ms(r.percentile(100)),
		r.statuses, r.transport, r.ok, r.degraded)
}

// phase sends n requests from clients goroutines, stopping early at the
// duration bound: context packs, and ingests with probability ingestShare.
// It returns the packs' result and the ingests'.
func (lt *loadTest) phase(ctx context.Context, clients, n int, bound time.Duration, think time.Duration, ingestShare float64) (packs, ingests *result) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	packs, ingests = &result{statuses: map[int]int{}}, &result{statuses: map[int]int{}}
	var mu sync.Mutex
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			// With think time, clients start at random moments and think
			// for 0.5–1.5× the pause, so that they do not ask in lockstep
			// bursts of all clients at once.
			if think > 0 && !lt.sleep(ctx, lt.jitter(0, think)) {
				return
			}
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				res, send := packs, lt.pack
				body := []byte(nil)
				switch {
				case ingestShare > 0 && lt.chance(ingestShare):
					res, send, body = ingests, lt.post(lt.itemsPath()), lt.liveBatch()
				case lt.c.qtype == "bridge":
					send, body = lt.bridge, lt.bridgeCall()
				default:
					body = lt.request()
				}
				t0 := time.Now()
				a, err := send(ctx, body)
				took := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil:
				case err != nil:
					res.transport++
				default:
					res.latencies = append(res.latencies, took)
					res.statuses[a.status]++
					if a.status == http.StatusOK && a.pack == "degraded" {
						res.degraded++
					}
					if a.status == http.StatusOK && a.pack == "ok" {
						res.ok++
					}
				}
				mu.Unlock()
				// A client told to come back later does, as agents
				// should: a shed request is not retried at once.
				if a.retryAfter > 0 && !lt.sleep(ctx, a.retryAfter) {
					return
				}
				if think > 0 && !lt.sleep(ctx, lt.jitter(think/2, think*3/2)) {
					return
				}
			}
		})
	}
	wg.Wait()
	packs.elapsed = time.Since(start)
	ingests.elapsed = packs.elapsed
	return packs, ingests
}

// chance returns true with probability p.
func (lt *loadTest) chance(p float64) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.rng.Float64() < p
}

// jitter returns a random duration in [lo, hi).
func (lt *loadTest) jitter(lo, hi time.Duration) time.Duration {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lo + time.Duration(lt.rng.Int64N(int64(hi-lo)))
}

// sleep waits d, or returns false when ctx ends first.
func (lt *loadTest) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// answer is what the client kept of a response.
type answer struct {
	status     int
	pack       string        // the pack's status, for packs answered 200
	retryAfter time.Duration // Retry-After of a 429 or 503
}

func answerOf(res *http.Response) answer {
	a := answer{status: res.StatusCode}
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
		if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && secs > 0 {
			a.retryAfter = time.Duration(secs) * time.Second
		}
	}
	return a
}

// getMetrics GETs the server's /metrics, with the key when there is one.
func (lt *loadTest) getMetrics(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, lt.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if lt.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+lt.c.key)
	}
	return lt.client.Do(req)
}

// postJSON posts a JSON body to path, with the key when there is one.
func (lt *loadTest) postJSON(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, lt.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if lt.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+lt.c.key)
	}
	return lt.client.Do(req)
}

// pack sends a context request.
func (lt *loadTest) pack(ctx context.Context, body []byte) (answer, error) {
	a, p, err := postDecoded[struct {
		Status string `json:"status"`
	}](ctx, lt, "/v1/context-pack", body, "the pack")
	if err != nil {
		return answer{}, err
	}
	a.pack = p.Status
	return a, nil
}

// postDecoded posts body to path and decodes a 200's answer into a T
// (what names it in the error); another status is answered as it is.
func postDecoded[T any](ctx context.Context, lt *loadTest, path string, body []byte, what string) (answer, T, error) {
	var v T
	res, err := lt.postJSON(ctx, path, body)
	if err != nil {
		return answer{}, v, err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil && res.StatusCode == http.StatusOK {
		return answer{}, v, fmt.Errorf("decoding %s: %w", what, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return answerOf(res), v, nil
}

// post returns a sender of JSON bodies to path, for ingests.
func (lt *loadTest) post(path string) func(ctx context.Context, body []byte) (answer, error) {
	return func(ctx context.Context, body []byte) (answer, error) {
		res, err := lt.postJSON(ctx, path, body)
		if err != nil {
			return answer{}, err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return answerOf(res), nil
	}
}

// vocabulary of the synthetic corpus: test-failure memories of a QA team.
var (
	subjects = []string{"login", "checkout", "search", "cart", "profile", "payment", "signup", "settings", "dashboard", "upload", "invoice", "report", "export", "filter", "sort"}
	problems = []string{"selector", "timeout", "flaky", "assertion", "network", "race", "locator", "render", "auth", "session", "cookie", "redirect", "modal", "iframe", "animation"}
	verbs    = []string{"failed", "timed out", "crashed", "passed after retry", "regressed", "was fixed", "was skipped", "hung", "errored", "was quarantined"}
	kinds    = []string{"test_failure", "fix", "runbook", "incident", "note", "ci_log"}
	levels   = []string{"public", "internal", "confidential", "restricted"}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// request returns a context request body for a random question.
func (lt *loadTest) request() []byte {
	lt.mu.Lock()
	text := fmt.Sprintf("%s test failures with %s issues", pick(lt.rng, subjects), pick(lt.rng, problems))
	level := pick(lt.rng, levels)
	lt.mu.Unlock()
	b, _ := json.Marshal(map[string]any{
		"specialist": map[string]any{"id": "loadtest", "securityLevel": level, "authorizedGroups": []string{"qa"}},
		"query":      map[string]any{"type": lt.c.qtype, "text": text},
		"limit":      lt.c.limit,
	})
	return b
}

// synthItem returns a synthetic item named name drawn from r; now and then
// it links to one of the items load-0000000 … load-(linkBelow-1).
func synthItem(r *rand.Rand, name string, created time.Time, linkBelow int) map[string]any {
	s, p, v := pick(r, subjects), pick(r, problems), pick(r, verbs)
	item := map[string]any{
		"id":   name,
		"kind": pick(r, kinds),
		"text": fmt.Sprintf("%s-spec-%03d %s: %s %s on build %d; the %s step saw a %s problem in the %s flow", s, r.IntN(500), v, p, s, r.IntN(100000), s, p, pick(r, subjects)),
		"content": map[string]any{"test": fmt.Sprintf("%s.spec.ts", s), "build": r.IntN(100000),
			"log": strings.Repeat(p+" ", 1+r.IntN(20))},
		"metadata": map[string]any{
			"createdAt":  created.Add(time.Duration(r.IntN(90*24)) * time.Hour).UTC().Format(time.RFC3339),
			"importance": r.Float64(), "trust": 0.2 + 0.8*r.Float64(), "sensitivity": r.Float64(),
			"tags":        []string{s, p},
			"containsPII": r.IntN(20) == 0, "piiFields": []string{"$.content.log"},
		},
	}
	if linkBelow > 0 && r.IntN(3) == 0 {
		item["links"] = []map[string]any{{"type": "caused_by", "target": fmt.Sprintf("load-%07d", r.IntN(linkBelow))}}
	}
	return item
}

// itemsPath is where items are ingested: trajectories for the bridge.
func (lt *loadTest) itemsPath() string {
	if lt.c.qtype == "bridge" {
		return "/v1/bridge/trajectories"
	}
	return "/v1/items"
}

// batchBody returns an ingest body of items named names: trajectories
// for the bridge, linked now and then to the loaded items otherwise.
func (lt *loadTest) batchBody(r *rand.Rand, names []string, created time.Time, linkBelow func(i int) int) ([]byte, error) {
	items := make([]map[string]any, len(names))
	for i, name := range names {
		if lt.c.qtype == "bridge" {
			items[i] = synthTrajectory(r, name)
		} else {
			items[i] = synthItem(r, name, created, linkBelow(i))
		}
	}
	if lt.c.qtype == "bridge" {
		return json.Marshal(map[string]any{"trajectories": items})
	}
	return json.Marshal(map[string]any{"items": items})
}

// liveBatch returns the body of an ingest of the concurrent phase:
// --ingest-batch new items (live-…), linked now and then to loaded ones.
func (lt *loadTest) liveBatch() []byte {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	names := make([]string, lt.c.ingestBatch)
	for i := range names {
		names[i] = fmt.Sprintf("live-%07d", lt.live)
		lt.live++
	}
	b, _ := lt.batchBody(lt.rng, names, time.Now().Add(-24*time.Hour), func(int) int { return lt.c.items })
	return b
}

// ingest writes c.items synthetic items in batches.
func (lt *loadTest) ingest(ctx context.Context, out io.Writer) error {
	r := rand.New(rand.NewPCG(lt.c.seed, 7))
	created := time.Now().Add(-90 * 24 * time.Hour)
	// The batches are made in order (the same items whatever --senders),
	// then sent by --senders workers.
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the rest
	defer cancel()
	bodies := make(chan []byte, lt.c.senders)
	errs := make(chan error, lt.c.senders+1)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range lt.c.senders {
		wg.Go(func() {
			for body := range bodies {
				if err := lt.postItems(ctx, body); err != nil {
					errs <- err
					cancel()
					return
				}
				if n := sent.Add(1); n%10 == 0 {
					fmt.Fprintf(out, "  %d batches\n", n)
				}
			}
		})
	}
	wg.Go(func() {
		defer close(bodies)
		for start := 0; start < lt.c.items; start += lt.c.batch {
			names := make([]string, min(lt.c.batch, lt.c.items-start))
			for i := range names {
				names[i] = fmt.Sprintf("load-%07d", start+i)
			}
			body, err := lt.batchBody(r, names, created, func(i int) int { return start + i })
			if err != nil {
				errs <- err
				cancel()
				return
			}
			select {
			case bodies <- body:
			case <-ctx.Done():
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	return <-errs // the first error, or nil
}

// postItems sends one ingest request and expects 200.
func (lt *loadTest) postItems(ctx context.Context, body []byte) error {
	res, err := lt.postJSON(ctx, lt.itemsPath(), body)
	if err != nil {
		return fmt.Errorf("ingesting a batch: %w", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("ingesting a batch: status %d: %s", res.StatusCode, b)
	}
	return nil
}

// watchRSS samples the server's resident memory every second until ctx
// ends, and returns a function giving the peak seen (VmHWM with --pid).
func (lt *loadTest) watchRSS(ctx context.Context) func() int64 {
	var peak atomic.Int64
	sample := func() {
		if v, err := lt.rss(ctx); err == nil && v > peak.Load() {
			peak.Store(v)
		}
	}
	sample()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() int64 { sample(); return peak.Load() }
}

func (lt *loadTest) rss(ctx context.Context) (int64, error) {
	if lt.c.pid > 0 {
		r, err := procmem.Of(lt.c.pid)
		return r.Peak, err
	}
	res, err := lt.getMetrics(ctx)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return int64(v), err
		}
	}
	return 0, errors.New("no process_resident_memory_bytes in /metrics")
}
