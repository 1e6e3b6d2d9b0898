package ann_test

import (
	"database/sql"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/internal/cputime"
)

// BenchmarkStoreVectors measures the inverted file against the exact scan
// on the vectors of a real store, with queries embedded as the server
// embeds them: H4R_ANN_STORE names an embedded store's file (h4r.db, for
// instance one that h4r bench latency --api built) whose learned
// embedder's model and vectors are read, and H4R_ANN_QUERIES a file of
// query texts, one a line (the queries-SIZE.txt that run writes). It
// reports recall@100 after rescoring against the exact float32 top 100,
// the share scanned and CPU time per search of each, at the calibrated
// probes and at fixed ones.
func BenchmarkStoreVectors(b *testing.B) {
	path, qpath := os.Getenv("H4R_ANN_STORE"), os.Getenv("H4R_ANN_QUERIES")
	if path == "" || qpath == "" {
		b.Skip("set H4R_ANN_STORE to a store's h4r.db and H4R_ANN_QUERIES to a file of queries")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var data []byte
	if err := db.QueryRow(`SELECT data FROM embedder_models WHERE kind = 'learned'`).Scan(&data); err != nil {
		b.Fatalf("reading the learned model: %v", err)
	}
	m, err := embed.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	emb := embed.NewLearned(m, m.Dim())
	raw, err := os.ReadFile(qpath)
	if err != nil {
		b.Fatal(err)
	}
	var texts []string
	for line := range strings.Lines(string(raw)) {
		if line = strings.TrimSpace(line); line != "" {
			texts = append(texts, line)
		}
	}
	queries, err := emb.Embed(b.Context(), texts)
	if err != nil {
		b.Fatal(err)
	}

	t0 := time.Now()
	rows, err := db.Query(`SELECT item_id, vector FROM item_vectors WHERE model = ?`, emb.Model())
	if err != nil {
		b.Fatal(err)
	}
	exact := ann.New(ann.WithThreshold(0))
	ivf := ann.New(ann.WithThreshold(1 << 40)) // clustered once, below
	var ids []string
	at := map[string]int{}
	var all []float32
	var vec []float32
	for rows.Next() {
		var id string
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			b.Fatal(err)
		}
		if vec, err = vecindex.DecodeFloat32(vec, blob); err != nil {
			b.Fatal(err)
		}
		exact.Put(id, vec)
		ivf.Put(id, vec)
		at[id] = len(ids)
		ids = append(ids, id)
		all = append(all, vec...)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	n, d := len(ids), m.Dim()
	b.Logf("%d vectors of %d dimensions (model %s), %d queries, read in %s", n, d, emb.Model(), len(queries), time.Since(t0).Round(time.Second))
	cpu := cputime.Process()
	ivf.Recluster()
	b.Logf("clustered into %d lists, %d probes calibrated, in %.1f CPU-seconds", ivf.Lists(), ivf.Probes(), (cputime.Process() - cpu).Seconds())

	// The exact float32 top 100 of each query, by brute force.
	truth := make([][]vecindex.Scored, len(queries))
	scores := make([]float32, n)
	for qi, q := range queries {
		for i := range n {
			scores[i] = vecindex.Dot(q, all[i*d:(i+1)*d])
		}
		truth[qi] = vecindex.Top(ids, scores, 100, -2)
	}
	rescore := func(x *ann.Index, q []float32) ([]vecindex.Scored, int) {
		want := vecindex.Candidates(100)
		got, sc, slack, _ := x.Search(q, want)
		cands := vecindex.Top(got, sc, want, -1-slack)
		vecs := make(map[string][]float32, len(cands))
		for _, c := range cands {
			i := at[c.ID]
			vecs[c.ID] = all[i*d : (i+1)*d]
		}
		return vecindex.Rescore(q, cands, vecs, 100, -1), len(got)
	}
	measure := func(x *ann.Index) (recall, scanned, cpuMs float64) {
		runtime.GC()
		start := cputime.Process()
		for _, q := range queries {
			x.Search(q, vecindex.Candidates(100))
		}
		cpuMs = float64((cputime.Process() - start).Microseconds()) / 1000 / float64(len(queries))
		for qi, q := range queries {
			top, s := rescore(x, q)
			recall += overlap(top, truth[qi])
			scanned += float64(s)
		}
		return recall / float64(len(queries)), 100 * scanned / float64(len(queries)*n), cpuMs
	}
	calibrated := ivf.Probes()
	for range b.N {
		r, s, c := measure(exact)
		b.Logf("exact scan: recall@100 %.4f, scanned %.1f%%, %.2f CPU-ms per search", r, s, c)
		for _, probes := range []int{calibrated, 8, 16, 32, 64, 128} {
			ivf.SetProbes(probes)
			r, s, c := measure(ivf)
			b.Logf("IVF %d probes of %d lists (calibrated: %d): recall@100 %.4f, scanned %.1f%%, %.2f CPU-ms per search", probes, ivf.Lists(), calibrated, r, s, c)
			if probes == calibrated {
				b.ReportMetric(r, "recall@100")
				b.ReportMetric(s, "%scanned")
			}
		}
	}
}
