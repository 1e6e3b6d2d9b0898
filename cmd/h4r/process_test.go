//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/syncbuf"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
)

// runMainEnv makes the test binary behave as the h4r binary: TestMain runs
// main() with the process's own arguments, signals and exit code. Tests
// that must crash or signal a real server process start it this way, so
// they need no separate `go build` and always run the code under test.
const runMainEnv = "H4R_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverProcess is `h4r serve` running in a child process.
type serverProcess struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncbuf.Buffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// startProcess runs `h4r serve --addr 127.0.0.1:0` over dataDir with only
// the given variables in its environment and waits until it listens.
func startProcess(t *testing.T, dataDir string, vars ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append([]string{runMainEnv + "=1", "H4R_DATA_DIR=" + dataDir, "H4R_LOG_FORMAT=json",
		"H4R_REQUEST_TIMEOUT_MS=60000", "H4R_GENERATOR_TIMEOUT_MS=60000", "H4R_SHUTDOWN_GRACE_MS=120000",
		// These tests are about the process, not about busy writes: a loaded
		// CI machine under -race must not turn a write into a 503.
		"H4R_WRITE_TIMEOUT_MS=600000",
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}, vars...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			p.stderr.Write(append(line, '\n'))
			var rec struct {
				Msg, Addr string
			}
			if json.Unmarshal(line, &rec) == nil && strings.HasPrefix(rec.Msg, "h4r serving") && rec.Addr != "" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(p.stderr, out)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.exited:
		t.Fatalf("the server exited before listening: %v\n%s", p.err, p.stderr)
	case <-time.After(patience):
		t.Fatalf("the server did not listen within %s:\n%s", patience, p.stderr)
	}
	return p
}

// wait waits for the process to exit and returns its exit error.
func (p *serverProcess) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(patience):
		t.Fatalf("the server did not exit within %s:\n%s", patience, p.stderr)
		return nil
	}
}

// client never gives up on a slow server before the server's own bounds.
var client = &http.Client{Timeout: patience}

// ingest posts a batch of n items with ids prefix-0 … and returns the ids
// the server acknowledged with 200, or an error for anything else.
func ingest(base, prefix string, n int) ([]string, error) {
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"id": "%s-%d", "text": "login selector failure number %d on checkout", "metadata": {"importance": 0.6}}`, prefix, i, i))
	}
	res, err := client.Post(base+"/v1/items", "application/json", strings.NewReader(`{"items": [`+strings.Join(items, ",")+`]}`))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	var ack struct{ IDs []string }
	if err := json.Unmarshal(b, &ack); err != nil {
		return nil, fmt.Errorf("decoding the acknowledgement: %w", err)
	}
	return ack.IDs, nil
}

// openStore opens the data directory the way the server does, after the
// server has gone.
func openStore(t *testing.T, dataDir string) app.Store {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dataDir
	a, err := app.Open(context.Background(), cfg, app.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a.Store
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestSIGTERMUnderLoad sends SIGTERM while writers ingest and readers ask
// for packs, then checks that the server exited cleanly, that every ingest
// it acknowledged is in the store, that no request got a server error, and
// that the access counts of delivered items were written.
func TestSIGTERMUnderLoad(t *testing.T) {
	dataDir := t.TempDir()
	p := startProcess(t, dataDir, "H4R_ACCESS_COUNTING=delivery") // counts deliveries, so that the flush at shutdown is seen
	const writers, readers, batch = 6, 2, 5
	var (
		mu        sync.Mutex
		acked     []string
		delivered = map[string]int{}
		failures  []string // answers that are neither success nor a refused connection
	)
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				ids, err := ingest(p.base, fmt.Sprintf("w%d-b%d", w, i), batch)
				mu.Lock()
				acked = append(acked, ids...)
				if len(acked) >= 60 {
					once.Do(func() { close(enough) })
				}
				if err != nil && strings.Contains(err.Error(), "status") {
					failures = append(failures, err.Error())
				}
				mu.Unlock()
				if err != nil {
					return // the server is going away: connection refused or closed
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for {
				res, err := client.Post(p.base+"/v1/context-pack", "application/json",
					strings.NewReader(`{"specialist": {"id": "reader", "securityLevel": "internal"}, "query": {"text": "login selector failure"}, "limit": 5}`))
				if err != nil {
					return
				}
				var pack struct{ Results []struct{ ID string } }
				err = json.NewDecoder(res.Body).Decode(&pack)
				res.Body.Close()
				mu.Lock()
				if res.StatusCode != http.StatusOK || err != nil {
					failures = append(failures, fmt.Sprintf("context-pack: status %d, %v", res.StatusCode, err))
				} else {
					for _, r := range pack.Results {
						delivered[r.ID]++
					}
				}
				mu.Unlock()
				if res.StatusCode != http.StatusOK {
					return
				}
			}
		})
	}
	select {
	case <-enough:
	case <-p.exited:
		t.Fatalf("the server exited under load: %v\n%s", p.err, p.stderr)
	case <-time.After(patience):
		t.Fatalf("fewer than 60 items acknowledged within %s", patience)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("after SIGTERM the server exited with %v:\n%s", err, p.stderr)
	}
	wg.Wait()
	if !strings.Contains(p.stderr.String(), "in-flight requests finished") {
		t.Errorf("the log does not say in-flight requests finished:\n%s", p.stderr)
	}
	for _, f := range failures {
		t.Errorf("during shutdown a request got %s", f)
	}

	store := openStore(t, dataDir)
	ctx := context.Background()
	for _, id := range acked {
		if _, err := store.Get(ctx, id); err != nil {
			t.Errorf("acknowledged item %s is lost: %v", id, err)
		}
	}
	for id, n := range delivered {
		it, err := store.Get(ctx, id)
		if err != nil {
			t.Errorf("delivered item %s: %v", id, err)
			continue
		}
		if it.Metadata.AccessCount < int64(n) {
			t.Errorf("item %s was delivered %d times but its access count is %d", id, n, it.Metadata.AccessCount)
		}
	}
	t.Logf("%d items acknowledged, %d distinct items delivered, all present after SIGTERM", len(acked), len(delivered))
}

// TestKill9AfterAcknowledgedIngest kills the server with SIGKILL right
// after it acknowledged ingests, and checks that every acknowledged item
// is in the store: a 2xx means durable, not "queued".
func TestKill9AfterAcknowledgedIngest(t *testing.T) {
	stores := []struct {
		name string
		vars func(t *testing.T) []string
	}{
		{"embedded store", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string {
			return []string{"DATABASE_URL=" + pgtest.Schema(t, "h4r_cmdtest")}
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			vars := st.vars(t)
			dataDir := t.TempDir()
			p := startProcess(t, dataDir, vars...)
			// Ids unique to the run: a Postgres database outlives the test.
			run := fmt.Sprintf("k%d", time.Now().UnixNano())
			var acked []string
			for i := range 20 {
				ids, err := ingest(p.base, fmt.Sprintf("%s-%d", run, i), 10)
				if err != nil {
					t.Fatalf("ingest %d: %v", i, err)
				}
				acked = append(acked, ids...)
			}
			// One more item, with a word no other item holds, acknowledged
			// just before the kill: full-text search must find it after
			// the restart (the embedded store's index lives in memory and
			// is rebuilt from the file).
			word := "zq" + run
			marked := run + "-marked"
			res, err := client.Post(p.base+"/v1/items", "application/json", strings.NewReader(
				fmt.Sprintf(`{"items": [{"id": %q, "text": "checkout %s acknowledged before the kill", "metadata": {"importance": 0.6}}]}`, marked, word)))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("ingest of the marked item: status %d", res.StatusCode)
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var exit *exec.ExitError
			if err := p.wait(t); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the server was not killed by SIGKILL: %v", err)
			}
			// A restarted server must serve every acknowledged item.
			p2 := startProcess(t, dataDir, vars...)
			for _, id := range acked {
				res, err := client.Get(p2.base + "/v1/items/" + id)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					t.Errorf("acknowledged item %s: status %d after kill -9", id, res.StatusCode)
				}
			}
			if len(acked) != 200 {
				t.Errorf("%d items acknowledged, want 200", len(acked))
			}
			res, err = client.Post(p2.base+"/v1/context-pack", "application/json", strings.NewReader(
				fmt.Sprintf(`{"specialist": {"id": "reader", "securityLevel": "internal"}, "query": {"text": %q}, "limit": 5}`, word)))
			if err != nil {
				t.Fatal(err)
			}
			var pack struct{ Results []struct{ ID string } }
			err = json.NewDecoder(res.Body).Decode(&pack)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("context pack after kill -9: status %d, %v", res.StatusCode, err)
			}
			if len(pack.Results) == 0 || pack.Results[0].ID != marked {
				t.Errorf("full text for %q after kill -9 found %v, want %s first", word, pack.Results, marked)
			}
		})
	}
}
