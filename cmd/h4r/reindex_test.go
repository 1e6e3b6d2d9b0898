package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/h4r/h4r/store/qdrant/qdranttest"
)

const reindexItems = `{"id": "a", "text": "authentication token expired"}
{"id": "b", "text": "login button selector not found"}
`

// ingestThenReindex ingests two items with vars, then runs reindex with
// reindexVars laid over them and returns its output and error.
func ingestThenReindex(t *testing.T, vars, reindexVars map[string]string, args ...string) (string, error) {
	t.Helper()
	ctx := context.Background()
	if err := run(ctx, []string{"ingest", "-"}, strings.NewReader(reindexItems), io.Discard, io.Discard, env(vars)); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	merged := map[string]string{}
	for k, v := range vars {
		merged[k] = v
	}
	for k, v := range reindexVars {
		merged[k] = v
	}
	var out bytes.Buffer
	err := run(ctx, append([]string{"reindex"}, args...), nil, &out, io.Discard, env(merged))
	return out.String(), err
}

func TestReindex(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reindexVars map[string]string
		args        []string
		wantOut     string
		wantErr     string
		usage       bool
	}{
		{name: "embedded store", wantOut: "reindexed 2 items into the embedded store"},
		{name: "new embedder dimension", reindexVars: map[string]string{"H4R_EMBED_DIM": "128"}, wantOut: "reindexed 2 items into the embedded store"},
		{name: "graph without Neo4j", args: []string{"--graph"}, wantOut: "reindexed 2 items", wantErr: "NEO4J_URL is not set"},
		{name: "argument refused", args: []string{"extra"}, wantErr: "takes no arguments", usage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two items are too few for the learned embedder to learn from.
			vars := map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error", "H4R_EMBEDDER": "hash"}
			out, err := ingestThenReindex(t, vars, tc.reindexVars, tc.args...)
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("output %q, want it to contain %q", out, tc.wantOut)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("reindex: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			var u usageError
			if errors.As(err, &u) != tc.usage {
				t.Errorf("usage error = %v, want %v", !tc.usage, tc.usage)
			}
		})
	}
}

// With QDRANT_URL, reindex fills the collection from the store: here the
// items were ingested before Qdrant was configured.
func TestReindexIntoQdrant(t *testing.T) {
	q, url := qdranttest.Start(t)
	vars := map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error", "H4R_EMBEDDER": "hash"}
	out, err := ingestThenReindex(t, vars, map[string]string{"QDRANT_URL": url, "QDRANT_COLLECTION": "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "reindexed 2 items into Qdrant collection mem") || q.PointCount("mem") != 2 {
		t.Fatalf("output %q, %d points; want 2 items in mem", out, q.PointCount("mem"))
	}
}

// With the learned embedder (the default), reindex learns from the store
// and embeds every item; under the minimum it says why it cannot.
func TestReindexLearned(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		items   int
		wantOut string
		wantErr string
	}{
		{"enough items", 60, "reindexed 60 items into the embedded store", ""},
		{"too few items", 10, "", "at least 50 items are needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines strings.Builder
			for i := range tt.items {
				fmt.Fprintf(&lines, `{"id": "n%d", "text": "note %d about the %s engine and the %s wheel"}`+"\n",
					i, i, []string{"car", "automobile"}[i%2], []string{"front", "rear", "spare"}[i%3])
			}
			vars := env(map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error"})
			if err := run(ctx, []string{"ingest", "-"}, strings.NewReader(lines.String()), io.Discard, io.Discard, vars); err != nil {
				t.Fatalf("ingest: %v", err)
			}
			var out bytes.Buffer
			err := run(ctx, []string{"reindex"}, nil, &out, io.Discard, vars)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), tt.wantOut) {
				t.Fatalf("output %q, %v; want %q", out.String(), err, tt.wantOut)
			}
		})
	}
}
