package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
)

// BenchmarkPackHTTP times a hybrid POST /v1/context-pack through the
// handler h4r serve builds, in process (no socket), decoding every pack as
// the API benchmark's client does: the CPU of one pack, server and client.
// It reads the store of H4R_PACKBENCH_DATA (a folder h4r bench latency
// --api built with the default seed, such as bench-data/items-10000) and
// asks that benchmark's queries; without it, it builds 2,000 items of the
// same generator in a temporary folder. "parallel" keeps GOMAXPROCS×8
// packs in flight, for the mutex and block profiles. H4R_PACKBENCH_CPUPROFILE
// names a file for a CPU profile of the timed packs alone.
//
//	H4R_PACKBENCH_DATA=bench-data/items-10000 \
//	  go test ./cmd/h4r -run '^$' -bench PackHTTP -benchmem -count 6 | tee new.txt; benchstat old.txt new.txt
func BenchmarkPackHTTP(b *testing.B) {
	ctx := context.Background()
	dir := os.Getenv("H4R_PACKBENCH_DATA")
	if dir == "" {
		dir = b.TempDir()
		cfg, err := app.LoadConfig(env(map[string]string{"H4R_DATA_DIR": dir, "H4R_LOG_LEVEL": "error"}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bench.BuildCorpus(ctx, cfg, dir, 2000, 1, 20000, nil); err != nil {
			b.Fatal(err)
		}
	}
	// As many distinct queries as packs timed, so that no cache of the
	// server answers a query it saw before.
	queries := bench.APIQueries(1, 5000)
	cfg, err := app.LoadConfig(env(map[string]string{"H4R_DATA_DIR": dir, "H4R_LOG_LEVEL": "error"}))
	if err != nil {
		b.Fatal(err)
	}
	svc, err := openService(ctx, cfg, nil, false, false, quietLog())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.close(quietLog()) })
	b.Cleanup(tuneGC(ctx, cfg, quietLog())) // as h4r serve runs
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		if bodies[i], err = json.Marshal(map[string]any{"query": h4r.Query{Type: h4r.QueryHybrid, Text: q}, "specialist": bench.Benchmarker()}); err != nil {
			b.Fatal(err)
		}
	}
	// one sends the i-th query and reports whether its pack is degraded.
	one := func(b *testing.B, i int) (degraded bool) {
		req := httptest.NewRequest("POST", "/v1/context-pack", bytes.NewReader(bodies[i%len(bodies)]))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "127.0.0.1:1234"
		req.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		svc.handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		var pk h4r.Pack
		if err := json.NewDecoder(w.Body).Decode(&pk); err != nil {
			b.Fatal(err)
		}
		return pk.Status != h4r.StatusOK
	}
	// The first packs load the indexes (and may miss their deadlines);
	// readiness says the warm-up in the background is over, so that it is
	// not timed with the packs.
	for i := range min(20, len(bodies)) {
		one(b, i)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/health/ready", nil)
		req.RemoteAddr, req.Host = "127.0.0.1:1234", "127.0.0.1"
		svc.handler.ServeHTTP(w, req)
		if w.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not ready after 5 minutes: %s", w.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		i, degraded := 0, 0
		for b.Loop() {
			if one(b, i) {
				degraded++
			}
			i++
		}
		// A pack degrades when a generator misses its deadline, as it can
		// on a loaded machine: counted, as the API benchmark counts them.
		b.ReportMetric(float64(degraded)/float64(i), "degraded/op")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		b.SetParallelism(8)
		var n, degraded atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if one(b, int(n.Add(1))) {
					degraded.Add(1)
				}
			}
		})
		b.ReportMetric(float64(degraded.Load())/float64(b.N), "degraded/op")
	})
}

// reportCPU reports the process's CPU time (user and system, every
// goroutine's) per operation, as cpu-ms/op: a loaded machine moves it far
// less than ns/op. Deferred, it stops the timer first.
func reportCPU(b *testing.B) func() {
	var prof *os.File
	if path := os.Getenv("H4R_PACKBENCH_CPUPROFILE"); path != "" {
		var err error
		if prof, err = os.Create(path); err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(prof); err != nil {
			b.Fatal(err)
		}
	}
	start := cpuTime(b)
	return func() {
		b.StopTimer()
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
