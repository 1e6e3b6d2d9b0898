package bench_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/internal/procmem"
)

// BenchmarkStoreHeap opens the service over an existing embedded store as
// h4r serve does (the environment's configuration, H4R_BENCH_STORE its
// folder, for instance one h4r bench latency --api built), waits until
// the in-memory indexes are built, times the first packs of the queries
// in H4R_BENCH_QUERIES (one a line, hybrid), and writes a heap profile
// after them to H4R_BENCH_HEAPPROFILE (go tool pprof
// -sample_index=inuse_space reads it). It reports the time to ready, the
// live heap and the resident memory.
func BenchmarkStoreHeap(b *testing.B) {
	dir, qpath := os.Getenv("H4R_BENCH_STORE"), os.Getenv("H4R_BENCH_QUERIES")
	if dir == "" || qpath == "" {
		b.Skip("set H4R_BENCH_STORE to a store's folder and H4R_BENCH_QUERIES to a file of queries")
	}
	raw, err := os.ReadFile(qpath)
	if err != nil {
		b.Fatal(err)
	}
	var queries []string
	for line := range strings.Lines(string(raw)) {
		if line = strings.TrimSpace(line); line != "" {
			queries = append(queries, line)
		}
	}
	cfg, err := app.LoadConfig(os.LookupEnv)
	if err != nil {
		b.Fatal(err)
	}
	cfg.DataDir, cfg.DatabaseURL = dir, ""
	for range b.N {
		t0 := time.Now()
		a, err := app.Open(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Since(t0)
		for a.Checks["warm-up"](b.Context()) != nil {
			time.Sleep(100 * time.Millisecond)
		}
		ready := time.Since(t0)
		mem, err := procmem.Of(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("opened in %s, ready in %s; RSS %d MB (peak %d MB)", opened.Round(time.Millisecond), ready.Round(time.Millisecond), mem.Current>>20, mem.Peak>>20)
		for i, q := range queries {
			ctx, cancel := context.WithTimeout(b.Context(), cfg.RequestTimeout)
			t1 := time.Now()
			p, err := a.Engine.ContextPack(ctx, bench.Benchmarker(), &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: q}})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			if i < 3 {
				b.Logf("pack %d: %s, status %s, %d results, warnings %q", i+1, time.Since(t1).Round(time.Millisecond), p.Status, len(p.Results), p.Explainability.Warnings)
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if mem, err = procmem.Of(os.Getpid()); err != nil {
			b.Fatal(err)
		}
		b.Logf("after %d packs: live heap %d MB, heap in use %d MB, idle %d MB (%d MB released), runtime total %d MB; RSS %d MB (peak %d MB)",
			len(queries), ms.HeapAlloc>>20, ms.HeapInuse>>20, ms.HeapIdle>>20, ms.HeapReleased>>20, ms.Sys>>20, mem.Current>>20, mem.Peak>>20)
		b.ReportMetric(ready.Seconds(), "s-to-ready")
		b.ReportMetric(float64(ms.HeapAlloc>>20), "MB-live-heap")
		b.ReportMetric(float64(mem.Current>>20), "MB-RSS")
		if path := os.Getenv("H4R_BENCH_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
