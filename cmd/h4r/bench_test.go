package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
)

// The bench commands end to end on a tiny generated set: gen writes a
// dataset, quality and tune read it through the real service, and the
// weights file tune writes is one the server loads.
func TestBenchCommands(t *testing.T) {
	ctx := context.Background()
	data, out := t.TempDir(), t.TempDir()
	// A minute's write deadline: loading under -race on a loaded machine
	// misses the 5 s default, and nothing here depends on it.
	vars := env(map[string]string{"H4R_LOG_LEVEL": "error", "H4R_WRITE_TIMEOUT_MS": "60000"})
	conv, hard := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	steps := []struct {
		name  string
		args  []string
		files []string
	}{
		{"gen", []string{"bench", "gen", "--out", data, "--queries", "3", "--noise", "2", "--seed", "4"},
			[]string{filepath.Join(data, "corpus.jsonl"), filepath.Join(data, bench.MappingFile)}},
		{"gen conversation", []string{"bench", "gen", "--kind", "conversation", "--out", conv, "--conversations", "2", "--seed", "4"},
			[]string{filepath.Join(conv, "corpus.jsonl"), filepath.Join(conv, "qrels", "test.tsv"), filepath.Join(conv, bench.MappingFile)}},
		{"quality", []string{"bench", "quality", "--dataset", data, "--weights", "relevance", "--out", out},
			[]string{"quality-" + filepath.Base(data) + ".json", "quality-" + filepath.Base(data) + "-queries.jsonl", "quality.md"}},
		{"gen hard conversation", []string{"bench", "gen", "--kind", "conversation", "--hard", "--out", hard, "--conversations", "2", "--seed", "4"},
			[]string{filepath.Join(hard, "corpus.jsonl"), filepath.Join(hard, "qrels", "test.tsv"), filepath.Join(hard, bench.MappingFile)}},
		{"quality against bm25", []string{"bench", "quality", "--dataset", hard, "--against-bm25", "--out", out},
			[]string{"quality-" + filepath.Base(hard) + ".json", "quality-" + filepath.Base(hard) + "-bm25.json", "quality-" + filepath.Base(hard) + "-bm25-queries.jsonl"}},
		{"tune", []string{"bench", "tune", "--dataset", data, "--k", "3", "--restarts", "0", "--out", out, "--save-cache", filepath.Join(out, "cache.json")},
			[]string{"weights.json", "tune.json", "tune.md", "tune-sweep.svg", "tune-path.svg", "cache.json"}},
		{"tune from the cache", []string{"bench", "tune", "--from-cache", filepath.Join(out, "cache.json"), "--k", "3", "--restarts", "0", "--out", out, "--weights-out", filepath.Join(out, "again.json")},
			[]string{"again.json"}},
		{"latency", []string{"bench", "latency", "--sizes", "20,40", "--requests", "3", "--concurrency", "1,2", "--out", out, "--cpuprofile", filepath.Join(out, "cpu.pprof"),
			"--mutexprofile", filepath.Join(out, "mutex.pprof"), "--blockprofile", filepath.Join(out, "block.pprof")},
			[]string{"latency.json", "latency.md", "latency.svg", "cpu.pprof", "mutex.pprof", "block.pprof"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			stdout.Reset()
			stderr.Reset()
			if err := run(ctx, st.args, nil, &stdout, &stderr, vars); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(st.args, " "), err, stderr.String())
			}
			for _, f := range st.files {
				if !filepath.IsAbs(f) {
					f = filepath.Join(out, f)
				}
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s did not write %s: %v", st.name, f, err)
				}
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(out, "quality.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Against relevance-only BM25", "| " + filepath.Base(hard) + " | temporal | 2 |", "| relevance only | off |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("quality.md of --against-bm25 lacks %q:\n%s", want, md)
		}
	}
	wf, err := config.ReadWeightsFile(filepath.Join(out, "weights.json"))
	if err != nil {
		t.Fatalf("the tuned weights file does not load: %v", err)
	}
	if !strings.Contains(wf.Source, "bench tune") || len(wf.HeldOut) == 0 {
		t.Errorf("weights file provenance %+v", wf)
	}
	again, err := config.ReadWeightsFile(filepath.Join(out, "again.json"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Weights != wf.Weights || again.RecencyDecayLambda != wf.RecencyDecayLambda {
		t.Errorf("tuning from the cache gave %+v, from the dataset %+v", again, wf)
	}
	var rep struct {
		Schema string `json:"schema"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "quality-"+filepath.Base(data)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Schema != bench.QualitySchema {
		t.Errorf("quality report schema %q (%v), want %s", rep.Schema, err, bench.QualitySchema)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"bench"}, "missing subcommand"},
		{"unknown subcommand", []string{"bench", "fly"}, `unknown subcommand "fly"`},
		{"quality without dataset", []string{"bench", "quality"}, "--dataset"},
		{"gen without out", []string{"bench", "gen"}, "--out"},
		{"descending sizes", []string{"bench", "latency", "--sizes", "10,5"}, "ascending"},
		{"bad weights file", []string{"bench", "quality", "--dataset", "x", "--weights", "/nonexistent.json"}, "H4R_WEIGHTS_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, nil, &stdout, &stderr, env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
