package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
)

// The secret of the fake credentials file; it must never leave the server.
const fakeSecret = "sk-FAKE-7f3a9c0e1d2b4a68"

// copyRepoSubset copies this repository's README and the slicer's and the
// pack builder's code (tests left out, to keep the test quick) into a git
// working tree of its own, with a fake credentials file.
func copyRepoSubset(t *testing.T, dst string) int {
	t.Helper()
	n := 0
	cp := func(rel string) {
		b, err := os.ReadFile(filepath.Join("..", "..", rel))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	cp("README.md")
	cp("go.mod")
	for _, dir := range []string{"scs", "pack"} {
		names, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !strings.HasSuffix(name, "_test.go") {
				cp(filepath.Join(dir, filepath.Base(name)))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dst, ".env"), []byte("OPENAI_API_KEY="+fakeSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n++
	if _, err := git.PlainInit(dst, false); err != nil {
		t.Fatal(err)
	}
	return n
}

type apiClient struct {
	t    *testing.T
	base string
}

func (c apiClient) do(method, path, key, body string) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

type jobRecord struct {
	ID       string `json:"job_id"`
	State    string `json:"state"`
	Error    string `json:"error"`
	Progress struct {
		FilesSeen      int `json:"files_seen"`
		FilesChanged   int `json:"files_changed"`
		FilesUnchanged int `json:"files_unchanged"`
		ChunksWritten  int `json:"chunks_written"`
		Errors         []struct{ Path, Message string }
		Message        string `json:"message"`
	} `json:"progress"`
}

func (c apiClient) waitJob(id, key string) jobRecord {
	c.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		status, b := c.do(http.MethodGet, "/v1/jobs/"+id, key, "")
		if status != http.StatusOK {
			c.t.Fatalf("GET /v1/jobs/%s: %d %s", id, status, b)
		}
		var j jobRecord
		if err := json.Unmarshal(b, &j); err != nil {
			c.t.Fatal(err)
		}
		if j.State == "succeeded" || j.State == "failed" {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s still %s", id, j.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c apiClient) ingest(key, body string) jobRecord {
	c.t.Helper()
	status, b := c.do(http.MethodPost, "/ingest", key, body)
	if status != http.StatusAccepted {
		c.t.Fatalf("POST /ingest: %d %s", status, b)
	}
	var started struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(b, &started); err != nil || started.JobID == "" {
		c.t.Fatalf("POST /ingest answered %s", b)
	}
	return c.waitJob(started.JobID, key)
}

func keyEntry(key, id, level string, routes ...string) string {
	sum := sha256.Sum256([]byte(key))
	rs, _ := json.Marshal(routes)
	return `{"sha256": "` + hex.EncodeToString(sum[:]) + `", "principal": {"id": "` + id + `", "securityLevel": "` + level + `"}, "routes": ` + string(rs) + `}`
}

// startIngestServe runs h4r serve (no demo data) with the variables on a loopback port until
// the test ends.
func startIngestServe(t *testing.T, vars map[string]string) apiClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--addr", "127.0.0.1:0"}, io.Discard, env(vars), ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		return apiClient{t, "http://" + addr}
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v", err)
	case <-time.After(patience):
		cancel()
		t.Fatal("serve did not listen")
	}
	return apiClient{}
}

// TestJobsBelongToTheirKey: a job is shown to the key that started it and
// to admin keys; any other key gets the 404 of a job that does not exist.
func TestJobsBelongToTheirKey(t *testing.T) {
	base := t.TempDir()
	folder := filepath.Join(base, "notes")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "a.md"), []byte("# Notes\n\nA note of key A.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	keys := "[" + strings.Join([]string{
		keyEntry("key-a", "indexer-a", "internal", "read", "ingest"),
		keyEntry("key-b", "indexer-b", "internal", "read", "ingest"),
		keyEntry("admin-key", "operator", "restricted", "read", "ingest", "admin"),
	}, ",") + "]"
	if err := os.WriteFile(keysFile, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startIngestServe(t, map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "warn", "H4R_API_KEYS_FILE": keysFile,
		"H4R_INGEST_ROOTS": base, "H4R_WRITE_TIMEOUT_MS": "120000"})

	j := c.ingest("key-a", `{"sources": [{"type": "fs", "path": "`+folder+`"}], "opts": {}}`)
	if j.State != "succeeded" {
		t.Fatalf("ingest as key A: %+v", j)
	}
	_, unknown := c.do(http.MethodGet, "/v1/jobs/job_000000000000000000000000", "key-b", "")
	status, b := c.do(http.MethodGet, "/v1/jobs/"+j.ID, "key-b", "")
	if status != http.StatusNotFound || bytes.Contains(b, []byte("a.md")) {
		t.Errorf("key B reads key A's job: %d %s", status, b)
	}
	// Same answer as an id that does not exist, but for the id itself.
	if strings.ReplaceAll(string(b), j.ID, "ID") != strings.ReplaceAll(string(unknown), "job_000000000000000000000000", "ID") {
		t.Errorf("another key's job answers\n%s\nan unknown one\n%s", b, unknown)
	}
	var rec struct {
		Owner string `json:"owner"`
	}
	for _, key := range []string{"key-a", "admin-key"} {
		status, b := c.do(http.MethodGet, "/v1/jobs/"+j.ID, key, "")
		if status != http.StatusOK || json.Unmarshal(b, &rec) != nil || rec.Owner == "" {
			t.Errorf("%s reading key A's job: %d %s", key, status, b)
		}
	}
	// The admin's own jobs are not shown to ingest keys either.
	status, b = c.do(http.MethodPost, "/v1/reindex", "admin-key", `{}`)
	var started struct {
		JobID string `json:"job_id"`
	}
	if status != http.StatusAccepted || json.Unmarshal(b, &started) != nil {
		t.Fatalf("reindex: %d %s", status, b)
	}
	c.waitJob(started.JobID, "admin-key")
	if status, b := c.do(http.MethodGet, "/v1/jobs/"+started.JobID, "key-a", ""); status != http.StatusNotFound {
		t.Errorf("key A reads the admin's reindex job: %d %s", status, b)
	}
}

// TestIngestRepositoryEndToEnd is ingestion end to end, over HTTP with
// API keys: ingest this repository's slicer, pack builder and README, ask
// how budgets are enforced and get chunks cited with path, sha and line
// range; a public key never receives the fake secret; edit one file and
// re-run: only it is re-chunked.
func TestIngestRepositoryEndToEnd(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "h4r")
	nFiles := copyRepoSubset(t, repo)
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	keys := "[" + strings.Join([]string{
		keyEntry("ingest-key", "indexer", "internal", "read", "ingest"),
		keyEntry("public-key", "outsider", "public", "read"),
		keyEntry("admin-key", "operator", "restricted", "read", "ingest", "admin"),
	}, ",") + "]"
	if err := os.WriteFile(keysFile, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startIngestServe(t, map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "warn", "H4R_API_KEYS_FILE": keysFile,
		"H4R_INGEST_ROOTS": base, "H4R_GENERATOR_TIMEOUT_MS": "60000", "H4R_REQUEST_TIMEOUT_MS": "60000",
		"H4R_WRITE_TIMEOUT_MS": "120000"})

	body := `{"sources": [{"type": "git", "path": "` + repo + `"}], "opts": {"rechunk": false, "reembed": false}}`
	j := c.ingest("ingest-key", body)
	if j.State != "succeeded" || j.Progress.FilesChanged != nFiles || j.Progress.ChunksWritten < nFiles || len(j.Progress.Errors) != 0 {
		t.Fatalf("first ingest: %+v", j)
	}

	// Ask as the internal key.
	ask := `{"query": {"type": "hybrid", "text": "how are budgets enforced?", "filters": {"kind": "chunk"}}, "limit": 8, "budget": {"maxTokens": 8000}}`
	status, b := c.do(http.MethodPost, "/v1/context-pack", "ingest-key", ask)
	if status != http.StatusOK {
		t.Fatalf("context pack: %d %s", status, b)
	}
	var pack struct {
		Results []struct {
			ID       string `json:"id"`
			Kind     string `json:"kind"`
			Citation *struct {
				Path      string  `json:"path"`
				SHA       string  `json:"sha"`
				LineRange []int   `json:"line_range"`
				Score     float64 `json:"score"`
			} `json:"citation"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &pack); err != nil {
		t.Fatal(err)
	}
	sha := regexp.MustCompile(`^[0-9a-f]{40}$`)
	var cited []string
	for _, r := range pack.Results {
		c := r.Citation
		if c == nil || c.Path == "" || !sha.MatchString(c.SHA) || len(c.LineRange) != 2 || c.LineRange[0] < 1 || c.LineRange[1] < c.LineRange[0] || c.Score <= 0 {
			t.Errorf("result %s has no full citation: %+v", r.ID, c)
			continue
		}
		cited = append(cited, c.Path)
	}
	t.Logf("how are budgets enforced? cited %v", cited)
	slicerOrReadme := 0
	for _, p := range cited[:min(5, len(cited))] {
		if strings.HasPrefix(p, "scs/") || p == "README.md" {
			slicerOrReadme++
		}
	}
	if slicerOrReadme < 3 {
		t.Errorf("the top answers to how budgets are enforced are not the slicer's code or README: %v", cited)
	}

	// The fake secret is ingested (flagged) but reaches no key, the
	// public one least of all, whatever the question.
	for _, key := range []string{"public-key", "ingest-key"} {
		for _, q := range []string{"OPENAI_API_KEY", fakeSecret, ".env"} {
			status, b := c.do(http.MethodPost, "/v1/context-pack", key, `{"query": {"type": "keyword", "text": "`+q+`"}, "limit": 50}`)
			if status != http.StatusOK {
				t.Fatalf("context pack as %s: %d %s", key, status, b)
			}
			if bytes.Contains(b, []byte(fakeSecret)) {
				t.Fatalf("%s received the secret asking %q", key, q)
			}
		}
	}

	// Edit one file; only it is re-chunked.
	edited := filepath.Join(repo, "scs", "slicer.go")
	src, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, append(src, []byte("\n// budgetNote is added by the test.\nconst budgetNote = 1\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	j = c.ingest("ingest-key", body)
	if j.State != "succeeded" || j.Progress.FilesChanged != 1 || j.Progress.FilesUnchanged != nFiles-1 {
		t.Errorf("re-run after one edit: %+v", j)
	}
	j = c.ingest("ingest-key", body)
	if j.Progress.FilesChanged != 0 || j.Progress.ChunksWritten != 0 || !strings.Contains(j.Progress.Message, "nothing changed") {
		t.Errorf("unchanged re-run: %+v", j)
	}

	// Refusals: outside the roots (the job says so), a bad body (400 naming
	// the field), reindex without admin (403).
	j = c.ingest("ingest-key", `{"sources": [{"type": "fs", "path": "/etc"}], "opts": {}}`)
	if j.State != "failed" || len(j.Progress.Errors) != 1 || !strings.Contains(j.Progress.Errors[0].Message, "outside the allowed ingest roots") {
		t.Errorf("outside the roots: %+v", j)
	}
	status, b = c.do(http.MethodPost, "/ingest", "ingest-key", `{"sources": [{"type": "svn", "path": "x"}], "opts": {}}`)
	if status != http.StatusBadRequest || !strings.Contains(string(b), `"field":"sources[0].type"`) {
		t.Errorf("bad source type: %d %s", status, b)
	}
	status, b = c.do(http.MethodPost, "/ingest", "public-key", body)
	if status != http.StatusForbidden {
		t.Errorf("ingest with a read key: %d %s", status, b)
	}
	if status, b = c.do(http.MethodPost, "/v1/reindex", "ingest-key", `{}`); status != http.StatusForbidden {
		t.Errorf("reindex with an ingest key: %d %s", status, b)
	}
	status, b = c.do(http.MethodPost, "/v1/reindex", "admin-key", `{}`)
	var started struct {
		JobID string `json:"job_id"`
	}
	if status != http.StatusAccepted || json.Unmarshal(b, &started) != nil {
		t.Fatalf("reindex: %d %s", status, b)
	}
	if j := c.waitJob(started.JobID, "admin-key"); j.State != "succeeded" {
		t.Errorf("reindex job: %+v", j)
	}
}
