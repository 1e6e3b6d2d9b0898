package server_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/cputime"

	"github.com/h4r/h4r/config"
)

// BenchmarkHTTPIngest posts batches of 1,000 new items (12 to 60 words of
// a Zipf vocabulary, two tags, a link) to POST /v1/items on loopback, on the
// embedded store with the built-in embedder: decoding, validation, token
// counting, vectors and the transaction. items/s is the figure; the
// client's encoding of each batch is left out of it. cpu-µs/item is the
// process's CPU time per item (server and the client's HTTP, the
// encoding left out), which a loaded machine does not inflate:
// 2e6 / cpu-µs/item is the rate two idle cores would reach.
//
//	go test ./server -run '^$' -bench HTTPIngest -benchtime 20x -count 6 | tee ingest.txt
//	go test ./server -run '^$' -bench HTTPIngest -benchtime 20x -cpuprofile cpu.out
func BenchmarkHTTPIngest(b *testing.B) {
	const batchSize = 1000
	// A batch's write may wait well past the 5 s default on a loaded
	// machine: the figure is the rate, not whether one batch met it.
	s := newStackWith(b, func(c *config.Config) { c.WriteTimeout = 10 * time.Minute })
	base := s.serve(b)
	rng := rand.New(rand.NewPCG(8, 9))
	vocab := make([]string, 5000)
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo")
	for i := range vocab {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocab[i] = sb.String()
	}
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	texts := make([]string, 2000)
	for i := range texts {
		w := make([]string, 12+rng.IntN(49))
		for j := range w {
			w[j] = vocab[zipf.Uint64()]
		}
		texts[i] = strings.Join(w, " ")
	}
	type item struct {
		ID       string            `json:"id"`
		Kind     string            `json:"kind"`
		Text     string            `json:"text"`
		Metadata map[string]any    `json:"metadata"`
		Links    []map[string]any  `json:"links"`
		Content  map[string]string `json:"content"`
	}
	n := 0
	var clientCPU int64 // the CPU the batches' encoding took
	client := &http.Client{}
	startCPU := int64(cputime.Process())
	for b.Loop() {
		b.StopTimer()
		encodeStart := int64(cputime.Process())
		batch := make([]item, batchSize)
		for j := range batch {
			id := fmt.Sprintf("ing-%07d", n+j)
			batch[j] = item{ID: id, Kind: "note", Text: texts[(n+j)%len(texts)],
				Metadata: map[string]any{"tags": []string{"bench", "ingest"}, "trust": 0.8},
				Links:    []map[string]any{{"type": "relates_to", "target": fmt.Sprintf("ing-%07d", max(n+j-1, 0))}},
				Content:  map[string]string{"summary": "bench"}}
		}
		body, err := json.Marshal(map[string]any{"items": batch})
		if err != nil {
			b.Fatal(err)
		}
		clientCPU += int64(cputime.Process()) - encodeStart
		b.StartTimer()
		resp, err := client.Post(base+"/v1/items", "application/json", strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		n += batchSize
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
	if cpu := int64(cputime.Process()) - startCPU - clientCPU; cpu > 0 {
		b.ReportMetric(float64(cpu)/1e3/float64(n), "cpu-µs/item")
	}
}
