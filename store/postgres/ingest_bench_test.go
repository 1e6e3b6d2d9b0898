package postgres_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/store/postgres"
)

// scifactTexts reads up to n abstracts of the scifact corpus (title and
// text), the texts the ingest benchmark writes.
func scifactTexts(b *testing.B, n int) []string {
	b.Helper()
	f, err := os.Open(filepath.Join(sharedDatasets, "scifact", "corpus.jsonl"))
	if err != nil {
		b.Skipf("scifact corpus not available: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var texts []string
	for sc.Scan() && len(texts) < n {
		var doc struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			b.Fatalf("reading the scifact corpus: %v", err)
		}
		texts = append(texts, doc.Title+". "+doc.Text)
	}
	return texts
}

// BenchmarkIngestWriters measures ingest throughput with 1 and 3
// concurrent writers, each upserting batches of 100 new items (scifact
// abstracts with metadata, tags and a link) through one store whose write
// pool has a connection per writer. One op is one batch; items/s is the
// figure to compare.
func BenchmarkIngestWriters(b *testing.B) {
	benchmarkIngestWriters(b, false)
}

// BenchmarkIngestWritersEmbedded is BenchmarkIngestWriters with an
// embedder (the hashing one, cheap), so that every write also writes
// vectors.
func BenchmarkIngestWritersEmbedded(b *testing.B) {
	benchmarkIngestWriters(b, true)
}

func benchmarkIngestWriters(b *testing.B, embedded bool) {
	texts := scifactTexts(b, 5000)
	for _, writers := range []int{1, 3} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dsn := pgtest.Schema(b, "h4r_bench")
			s, err := postgres.Open(b.Context(), dsn, postgres.WithMaxWriteConns(writers), postgres.WithWriteTimeout(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if embedded {
				h, err := embed.NewHash()
				if err != nil {
					b.Fatal(err)
				}
				s.EnableVectors(h)
			}
			const batch = 100
			next := make(chan int)
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			b.ResetTimer()
			start := time.Now()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range next {
						items := make([]h4r.Item, batch)
						for i := range items {
							k := n*batch + i
							items[i] = h4r.Item{
								ID:   fmt.Sprintf("doc/%d/%d", w, k),
								Kind: "document",
								Text: texts[k%len(texts)],
								Metadata: h4r.Metadata{Source: "bench", Tags: []string{"scifact", fmt.Sprintf("shard-%d", k%7)},
									Extra: map[string]any{"author": "loader"}},
								Links: []h4r.Link{{Type: "related", Target: fmt.Sprintf("doc/%d/%d", w, max(k-1, 0))}},
							}
						}
						if _, err := s.Upsert(b.Context(), items); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		feed:
			for n := range b.N {
				select {
				case next <- n:
				case err := <-errs:
					b.Error(err)
					break feed
				}
			}
			close(next)
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "items/s")
		})
	}
}
