package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/h4r/h4r/config"
)

func TestPercentiles(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Percentiles
	}{
		{"empty", nil, Percentiles{}},
		{"one", []float64{4}, Percentiles{4, 4, 4, 4}},
		// Nearest rank: p50 of 1..100 is the 50th value, p95 the 95th.
		{"one to a hundred, shuffled", shuffled(100), Percentiles{50, 95, 99, 50.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentiles(tt.in); got != tt.want {
				t.Errorf("percentiles = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func shuffled(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64((i*37)%n + 1)
	}
	return out
}

// A small latency run through the real service: every stage is timed at
// every size and concurrency, and the reports render.
func TestLatencySmall(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	calls := 0
	rep, err := Latency(context.Background(), cfg, LatencyOptions{
		Sizes: []int{30, 60}, Requests: 6, Concurrency: []int{1, 3}, Seed: 2, Vocabulary: 50,
		AfterSize: func(*LatencyReport) error { calls++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 4 || calls != 2 {
		t.Fatalf("%d runs, %d AfterSize calls; want 4 and 2", len(rep.Runs), calls)
	}
	for _, run := range rep.Runs {
		for _, stage := range []string{"fulltext", StageRanking, StageSlicing, StagePack, StageTotal} {
			if _, ok := run.Stages[stage]; !ok {
				t.Errorf("size %d, %d in flight: no %s timings (have %v)", run.Size, run.Concurrency, stage, run.Stages)
			}
		}
		if run.Throughput <= 0 || run.Stages[StageTotal].P50 <= 0 {
			t.Errorf("run %+v: no throughput or total time", run)
		}
	}
	if rep.Floor[30].P50 <= 0 || rep.Floor[60].P50 <= 0 {
		t.Errorf("floor %+v", rep.Floor)
	}
	for _, size := range []int{30, 60} {
		if m := rep.Memory[size]; m.ResidentMB <= 0 || m.PeakResidentMB < m.ResidentMB || m.LiveHeapMB <= 0 {
			t.Errorf("memory at %d items: %+v", size, m)
		}
	}
	var md bytes.Buffer
	LatencyMarkdown(&md, rep)
	if !strings.Contains(md.String(), "| 60 | 3 |") || !strings.Contains(md.String(), "peak resident") {
		t.Errorf("Markdown lacks the 60-item, 3-in-flight row:\n%s", md.String())
	}
	var svg bytes.Buffer
	if err := LatencySVG(&svg, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg.Bytes(), 2*(len(stageNames(rep))+1))
}

// checkSVG parses b as XML and counts its polylines.
func checkSVG(t *testing.T, b []byte, wantLines int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != wantLines {
		t.Errorf("%d polylines, want %d", lines, wantLines)
	}
}

func TestTuneChartsAreWellFormed(t *testing.T) {
	tu := NewTuner(WithSeed(1), WithRestarts(1))
	tu.Workers = 1
	rep, err := CrossValidate(context.Background(), knownOptimum(6), 2, tu, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := SweepSVG(&b, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b.Bytes(), 9) // eight weights and λ
	b.Reset()
	if err := PathSVG(&b, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b.Bytes(), len(tu.Starts)+tu.Restarts+1)
}
