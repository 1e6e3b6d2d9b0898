package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/cputime"
	"github.com/h4r/h4r/internal/procmem"
)

// APILatencySchema names the version of the API latency report's JSON shape.
const APILatencySchema = "h4r.bench.api-latency/v1"

// APILatencyOptions configure APILatency.
type APILatencyOptions struct {
	Sizes       []int // corpus sizes; each has a data folder of its own under DataDir
	Requests    int   // requests per (size, concurrency)
	Concurrency []int
	Seed        uint64
	QueryType   h4r.QueryType
	Vocabulary  int // distinct words of the generated corpus
	// DataDir holds one embedded store per size (DataDir/items-SIZE),
	// built on the first run and reused by later ones, so that a rerun at
	// 1M items does not load them again.
	DataDir string
	// URL targets a running server instead of starting one; the server must
	// hold a corpus made with the same seed and vocabulary (its size is
	// Sizes[0], for the report). Its resident set is not known then.
	URL string
	// Server is the command line that serves a data folder (its H4R_ADDR and
	// H4R_DATA_DIR are set in its environment), e.g. {"/path/h4r", "serve"}.
	Server []string
	// Env is the environment of the server besides those two.
	Env []string
	// QueriesDir, if set, receives queries-SIZE.txt: the queries of the
	// first concurrency at each size, one a line, for a peer to run
	// (bench/xapian_peer.py).
	QueriesDir string
	Progress   io.Writer
	// AfterRun is called with the report so far after each measurement.
	AfterRun func(*APILatencyReport) error
}

// APILatencyRun is one (corpus size, concurrency) measurement through HTTP.
type APILatencyRun struct {
	Size        int         `json:"size"`
	Concurrency int         `json:"concurrency"`
	Requests    int         `json:"requests"`
	Degraded    int         `json:"degraded"` // packs whose status is not ok
	Seconds     float64     `json:"seconds"`
	Throughput  float64     `json:"packsPerSecond"`
	Latency     Percentiles `json:"latencyMs"` // request sent to pack decoded
	MeanBytes   float64     `json:"meanPackBytes"`
	ResidentMB  float64     `json:"serverResidentMB,omitempty"`     // after the requests
	PeakMB      float64     `json:"serverPeakResidentMB,omitempty"` // the server's most since it started
	// The CPU time per pack of the server and of the client (this
	// process: sending, waiting, decoding), when the server is a process
	// of its own that the run started: what the throughput on one
	// machine is shared between.
	ServerCPUms float64 `json:"serverCpuMsPerPack,omitempty"`
	ClientCPUms float64 `json:"clientCpuMsPerPack,omitempty"`
	LoadAverage string  `json:"loadAverage"` // /proc/loadavg after the requests
}

// APILatencyReport is the result of h4r bench latency --api.
type APILatencyReport struct {
	Schema    string          `json:"schema"`
	QueryType string          `json:"queryType"`
	Seed      uint64          `json:"seed"`
	Build     map[int]float64 `json:"buildSeconds"`   // seconds to add the items this run (0: reused)
	Startup   map[int]float64 `json:"startupSeconds"` // server start to ready
	Runs      []APILatencyRun `json:"runs"`
	Command   string          `json:"command"`
}

// corpusMark records what a data folder holds, so that a rerun reuses it.
type corpusMark struct {
	Seed       uint64 `json:"seed"`
	Vocabulary int    `json:"vocabulary"`
	Items      int    `json:"items"`
}

const corpusMarkFile = "bench-corpus.json"

// APILatency measures whole context packs through HTTP: for each size it
// builds (or reuses) a store of that many generated items, starts a server
// on it, and sends hybrid queries of three Zipf words with a client that
// decodes every pack, at each concurrency. cfg is the configuration the
// store is built with (its DataDir is replaced).
func APILatency(ctx context.Context, cfg config.Config, o APILatencyOptions) (*APILatencyReport, error) {
	if o.Vocabulary <= 1 {
		o.Vocabulary = 20000
	}
	if o.QueryType == "" {
		o.QueryType = h4r.QueryHybrid
	}
	rep := &APILatencyReport{Schema: APILatencySchema, QueryType: string(o.QueryType), Seed: o.Seed, Build: map[int]float64{}, Startup: map[int]float64{}}
	for _, size := range o.Sizes {
		url, pid := o.URL, 0
		if url == "" {
			dir := filepath.Join(o.DataDir, "items-"+strconv.Itoa(size))
			t0 := time.Now()
			built, err := BuildCorpus(ctx, cfg, dir, size, o.Seed, o.Vocabulary, o.Progress)
			if err != nil {
				return nil, err
			}
			if built {
				rep.Build[size] = time.Since(t0).Seconds()
			}
			t0 = time.Now()
			srv, err := startServer(ctx, o.Server, o.Env, dir)
			if err != nil {
				return nil, err
			}
			rep.Startup[size] = time.Since(t0).Seconds()
			url, pid = srv.url, srv.pid
			err = measureAPI(ctx, rep, o, url, pid, size)
			if stopErr := srv.stop(); err == nil {
				err = stopErr
			} else if err != nil {
				err = fmt.Errorf("%w; the server's log ends: %s", err, tail(srv.logs.String(), 2000))
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := measureAPI(ctx, rep, o, url, pid, size); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// apiQueries generates the queries of the corpus of seed and vocabulary vocab.
// They come from a generator of their own seed: the corpus's generator
// would have to replay every item first.
func apiQueries(seed uint64, vocab int) *memoryCorpus {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	queries := newMemoryCorpus(seed+1, vocab, now)
	queries.words = newMemoryCorpus(seed, vocab, now).words
	return queries
}

// APIQueries returns the first n queries that h4r bench latency --api asks
// of the corpus of seed (and the default vocabulary): its warm-up's, then
// the ones its first concurrency times.
func APIQueries(seed uint64, n int) []string {
	q := apiQueries(seed, 20000)
	out := make([]string, n)
	for i := range out {
		out[i] = q.query()
	}
	return out
}

func measureAPI(ctx context.Context, rep *APILatencyReport, o APILatencyOptions, url string, pid, size int) error {
	queries := apiQueries(o.Seed, o.Vocabulary)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	// Warm up untimed: the first pack loads the in-memory indexes (about
	// two minutes at 1M items on a loaded machine, past the server's write
	// deadline, so that its connection is closed) and fills the caches a
	// running server has. Failures are retried for up to ten minutes.
	warmUntil := time.Now().Add(10 * time.Minute)
	for warmed := 0; warmed < min(20, o.Requests); {
		b, err := json.Marshal(map[string]any{"query": h4r.Query{Type: o.QueryType, Text: queries.query()}, "specialist": Benchmarker()})
		if err != nil {
			return fmt.Errorf("api latency: encoding a request: %w", err)
		}
		if _, _, err := postPack(ctx, client, url, b); err != nil {
			var status statusError
			if errors.As(err, &status) || time.Now().After(warmUntil) || ctx.Err() != nil {
				return err
			}
			continue
		}
		warmed++
	}
	for ci, c := range o.Concurrency {
		texts := make([]string, o.Requests)
		for i := range texts {
			texts[i] = queries.query()
		}
		if ci == 0 && o.QueriesDir != "" {
			path := filepath.Join(o.QueriesDir, fmt.Sprintf("queries-%d.txt", size))
			if err := os.MkdirAll(o.QueriesDir, 0o755); err != nil {
				return fmt.Errorf("api latency: %w", err)
			}
			if err := os.WriteFile(path, []byte(strings.Join(texts, "\n")+"\n"), 0o644); err != nil {
				return fmt.Errorf("api latency: writing the queries: %w", err)
			}
		}
		var serverCPU, clientCPU time.Duration
		if pid > 0 {
			var err error
			if serverCPU, err = cputime.OfProcess(pid); err != nil {
				return fmt.Errorf("api latency: %w", err)
			}
			clientCPU = cputime.Process()
		}
		run, err := timeAPIRequests(ctx, client, url, texts, o, size, c)
		if err != nil {
			return err
		}
		if pid > 0 {
			after, err := cputime.OfProcess(pid)
			if err != nil {
				return fmt.Errorf("api latency: %w", err)
			}
			perPack := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(o.Requests) }
			run.ServerCPUms, run.ClientCPUms = perPack(after-serverCPU), perPack(cputime.Process()-clientCPU)
			r, err := procmem.Of(pid)
			if err != nil {
				return fmt.Errorf("api latency: %w", err)
			}
			run.ResidentMB, run.PeakMB = float64(r.Current)/(1<<20), float64(r.Peak)/(1<<20)
		}
		if b, err := os.ReadFile("/proc/loadavg"); err == nil {
			f := strings.Fields(string(b))
			run.LoadAverage = strings.Join(f[:min(3, len(f))], " ")
		}
		rep.Runs = append(rep.Runs, run)
		if o.AfterRun != nil {
			if err := o.AfterRun(rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// timeAPIRequests sends o.Requests packs with c in flight and decodes each.
func timeAPIRequests(ctx context.Context, client *http.Client, url string, texts []string, o APILatencyOptions, size, c int) (APILatencyRun, error) {
	bodies := make([][]byte, len(texts))
	for i := range bodies {
		b, err := json.Marshal(map[string]any{
			"query":      h4r.Query{Type: o.QueryType, Text: texts[i]},
			"specialist": Benchmarker(),
		})
		if err != nil {
			return APILatencyRun{}, fmt.Errorf("api latency: encoding a request: %w", err)
		}
		bodies[i] = b
	}
	var (
		mu       sync.Mutex
		firstErr error
		degraded int
		ms       []float64
		bytesIn  int64
	)
	p := newProgress(o.Progress, fmt.Sprintf("API: %d items, %d in flight", size, c), o.Requests)
	start := time.Now()
	fanOut(ctx, len(bodies), c, func(i int) {
		t0 := time.Now()
		pk, n, err := postPack(ctx, client, url, bodies[i])
		total := float64(time.Since(t0).Microseconds()) / 1000
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			if pk.Status != h4r.StatusOK {
				degraded++
			}
			ms = append(ms, total)
			bytesIn += n
		}
		mu.Unlock()
		p.add(1)
	})
	p.finish()
	elapsed := time.Since(start).Seconds()
	if firstErr != nil {
		return APILatencyRun{}, firstErr
	}
	run := APILatencyRun{Size: size, Concurrency: c, Requests: o.Requests, Degraded: degraded, Seconds: elapsed,
		Throughput: float64(o.Requests) / elapsed, Latency: percentiles(ms)}
	if len(ms) > 0 {
		run.MeanBytes = float64(bytesIn) / float64(len(ms))
	}
	return run, ctx.Err()
}

// postPack asks url for a context pack and decodes it as a client would.
func postPack(ctx context.Context, client *http.Client, url string, body []byte) (*h4r.Pack, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/context-pack", bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("api latency: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("api latency: asking for a pack: %w", err)
	}
	defer resp.Body.Close()
	cr := &countingReader{r: resp.Body}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(cr, 1<<10))
		return nil, 0, statusError(fmt.Sprintf("api latency: the server answered %s: %s", resp.Status, b))
	}
	var pk h4r.Pack
	if err := json.NewDecoder(cr).Decode(&pk); err != nil {
		return nil, 0, fmt.Errorf("api latency: decoding a pack: %w", err)
	}
	// Read to the end (the encoder's closing newline), as a client that
	// keeps its connections does: net/http reuses a connection only when
	// its body was read to EOF before Close, and otherwise closes it.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return nil, 0, fmt.Errorf("api latency: reading the end of a pack: %w", err)
	}
	return &pk, cr.n, nil
}

// statusError is an answer other than 200: the server is up, so a warm-up
// does not retry it.
type statusError string

func (e statusError) Error() string { return string(e) }

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// BuildCorpus makes sure the embedded store in dir holds the first size
// items of the generated corpus of (seed, vocab), adding what is missing,
// and reports whether it added any. A folder made with another seed or
// vocabulary, or holding more items, is an error rather than silently
// measured.
func BuildCorpus(ctx context.Context, cfg config.Config, dir string, size int, seed uint64, vocab int, progress io.Writer) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("api latency: creating %s: %w", dir, err)
	}
	markPath := filepath.Join(dir, corpusMarkFile)
	var mark corpusMark
	switch b, err := os.ReadFile(markPath); {
	case err == nil:
		if err := json.Unmarshal(b, &mark); err != nil {
			return false, fmt.Errorf("api latency: reading %s: %w", markPath, err)
		}
		if mark.Seed != seed || mark.Vocabulary != vocab || mark.Items > size {
			return false, fmt.Errorf("api latency: %s holds %d items of seed %d, vocabulary %d; asked for %d of seed %d, vocabulary %d: use another folder",
				dir, mark.Items, mark.Seed, mark.Vocabulary, size, seed, vocab)
		}
	case errors.Is(err, os.ErrNotExist):
		mark = corpusMark{Seed: seed, Vocabulary: vocab}
	default:
		return false, fmt.Errorf("api latency: %w", err)
	}
	if mark.Items == size {
		return false, nil
	}
	cfg.DataDir, cfg.DatabaseURL = dir, ""
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	a, err := app.Open(ctx, cfg, app.WithLogger(slog.New(slog.DiscardHandler)), app.WithClock(func() time.Time { return now }))
	if err != nil {
		return false, fmt.Errorf("api latency: opening the store in %s: %w", dir, err)
	}
	corpus := newMemoryCorpus(seed, vocab, now)
	for done := 0; done < mark.Items; done += 1000 { // replay the generator up to where the folder stops
		corpus.items(done+1, min(done+1000, mark.Items))
	}
	p := newProgress(progress, fmt.Sprintf("building %d items in %s", size, dir), size-mark.Items)
	for mark.Items < size {
		end := min(mark.Items+1000, size)
		if _, err := a.Store.Upsert(ctx, corpus.items(mark.Items+1, end)); err != nil {
			a.Close()
			return false, fmt.Errorf("api latency: writing items %d–%d: %w", mark.Items+1, end, err)
		}
		p.add(end - mark.Items)
		mark.Items = end
		if mark.Items%50_000 == 0 || mark.Items == size { // a stopped build resumes from here
			if err := writeMark(markPath, mark); err != nil {
				a.Close()
				return false, err
			}
		}
	}
	p.finish()
	// Learn the embedder over the whole corpus and embed every item with
	// it, as h4r reindex does after a bulk load: the drift check learns
	// again in the background while items are written, and a build that
	// ends meanwhile leaves items without a vector of the current model,
	// which a server started on the folder would learn and embed anew
	// while it is measured.
	if a.Learns() {
		if progress != nil {
			fmt.Fprintf(progress, "learning the embedder over %d items\n", size)
		}
		embedding := newProgress(progress, fmt.Sprintf("embedding %d items with the learned model", size), size)
		embedded, err := a.LearnEmbedder(ctx, app.WithLearnProgress(embedding.reach))
		if err != nil && !errors.Is(err, embed.ErrNotLearned) {
			a.Close()
			return false, fmt.Errorf("api latency: learning the embedder over %s: %w", dir, err)
		}
		if embedded > 0 {
			embedding.finish()
		}
	}
	if err := a.Close(); err != nil {
		return false, fmt.Errorf("api latency: closing the store in %s: %w", dir, err)
	}
	return true, nil
}

func writeMark(path string, m corpusMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("api latency: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("api latency: recording the corpus: %w", err)
	}
	return nil
}

type server struct {
	url  string
	pid  int
	stop func() error
	logs *syncWriter // its standard error
}

// startServer starts command serving dir on a free loopback port and waits
// until it is ready.
func startServer(ctx context.Context, command, env []string, dir string) (*server, error) {
	if len(command) == 0 {
		return nil, errors.New("api latency: no server command")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("api latency: finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(append(os.Environ(), env...), "H4R_ADDR="+addr, "H4R_DATA_DIR="+dir, "DATABASE_URL=")
	logs := &syncWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("api latency: starting %s: %w", command[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	}
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Minute) // loading a million vectors takes a while
	for {
		if err := ctx.Err(); err != nil {
			stop()
			return nil, err
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("api latency: the server stopped before it was ready (%v): %s", err, tail(logs.String(), 2000))
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(url + "/health/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &server{url: url, pid: cmd.Process.Pid, stop: stop, logs: logs}, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("api latency: the server was not ready after 30 minutes: %s", tail(logs.String(), 2000))
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// APILatencyMarkdown writes one table row per (size, concurrency).
func APILatencyMarkdown(w io.Writer, r *APILatencyReport) {
	fmt.Fprintf(w, "Context packs through HTTP (%s queries of 3 Zipf words; each pack's JSON decoded by the client), latency in ms:\n\n", r.QueryType)
	fmt.Fprintln(w, "| items | in flight | p50 | p95 | p99 | packs/s | degraded | mean pack bytes | server RSS MB (peak) | cpu-ms a pack, server / client | load average |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, run := range r.Runs {
		rss, cpu := "—", "—"
		if run.ResidentMB > 0 {
			rss = fmt.Sprintf("%.0f (%.0f)", run.ResidentMB, run.PeakMB)
		}
		if run.ServerCPUms > 0 {
			cpu = fmt.Sprintf("%.2f / %.2f", run.ServerCPUms, run.ClientCPUms)
		}
		fmt.Fprintf(w, "| %d | %d | %.1f | %.1f | %.1f | %.0f | %d | %.0f | %s | %s | %s |\n", run.Size, run.Concurrency,
			run.Latency.P50, run.Latency.P95, run.Latency.P99, run.Throughput, run.Degraded, run.MeanBytes, rss, cpu, run.LoadAverage)
	}
}
