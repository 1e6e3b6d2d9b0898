package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// env returns a lookupEnv that sees only the given variables, so tests do
// not depend on the machine's environment.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// startServer runs the real `h4r serve --demo` command in-process on a
// loopback port and returns its base URL; the server stops at cleanup.
// extra are environment variables on top of the test's.
func startServer(t *testing.T, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	vars := map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "warn",
		// Deadlines no loaded test machine misses: the test is about behaviour.
		"H4R_GENERATOR_TIMEOUT_MS": "60000", "H4R_REQUEST_TIMEOUT_MS": "60000"}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	go func() {
		done <- cmdServe(ctx, []string{"serve", "--demo", "--addr", "127.0.0.1:0"}[1:], io.Discard, env(vars), ready)
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve did not shut down cleanly: %v", err)
			}
		})
		return "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("serve exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start listening within 30s")
	}
	return ""
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestServeEndToEnd is the README's promise, over real HTTP on loopback:
// the context-pack example and the A2A seed envelope.
func TestServeEndToEnd(t *testing.T) {
	base := startServer(t)

	t.Run("context pack from the README", func(t *testing.T) {
		body, err := os.ReadFile(filepath.Join("testdata", "readme-context-pack.json"))
		if err != nil {
			t.Fatal(err)
		}
		status, raw := post(t, base+"/v1/context-pack", string(body))
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, raw)
		}
		var p h4r.Pack
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		// The demo corpus's credential item and its sensitivity 0.85 item
		// are counted, never named: the anonymous caller may not audit.
		for _, id := range []string{"ci-env-dump-18342", "sec-pentest-login-enumeration"} {
			if strings.Contains(string(raw), `"`+id+`"`) {
				t.Errorf("%s, denied, is named in the pack", id)
			}
		}
		if p.Explainability.Slicing.TotalDroppedPolicy < 2 {
			t.Errorf("totalDroppedPolicy %d, want the denied items counted", p.Explainability.Slicing.TotalDroppedPolicy)
		}
		redacted := false
		for _, r := range p.Results {
			if r.Signals == nil || r.Explanation == "" {
				t.Errorf("%s: signals %v, explanation %q", r.ID, r.Signals, r.Explanation)
			}
			if r.Metadata.Redacted && r.Content["personalData"] == "[REDACTED]" {
				redacted = true
			}
		}
		if !redacted {
			t.Error("no result has its personalData redacted")
		}
		if len(p.Explainability.Affordances) == 0 {
			t.Error("no affordance")
		}
		if p.Explainability.Slicing.TotalDroppedBudget == 0 {
			t.Error("no budget drop")
		}
	})

	t.Run("A2A seed envelope", func(t *testing.T) {
		body, err := os.ReadFile(filepath.Join("testdata", "a2a-seed.json"))
		if err != nil {
			t.Fatal(err)
		}
		status, raw := post(t, base+"/v1/a2a", string(body))
		var env h4r.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatalf("status %d, body %s: %v", status, raw, err)
		}
		if status != http.StatusOK || env.Meta.Type != h4r.TypeContextResult || env.Meta.ReplyTo != "msg-123" {
			t.Fatalf("status %d, meta %+v", status, env.Meta)
		}
		var p h4r.Pack
		if err := json.Unmarshal(env.Payload, &p); err != nil || len(p.Results) == 0 {
			t.Fatalf("payload is not a pack with results: %v", err)
		}
	})

	t.Run("malformed envelope", func(t *testing.T) {
		status, raw := post(t, base+"/v1/a2a", `{"meta": {"id": "msg-9", "type": "ContextRequest"}, "payload": {"query": {"type": "psychic", "text": "x"}}}`)
		var env struct {
			Meta    h4r.EnvelopeMeta `json:"meta"`
			Payload h4r.Error        `json:"payload"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || env.Meta.Type != h4r.TypeContextError || env.Meta.ReplyTo != "msg-9" || env.Payload.Field != "payload.query.type" {
			t.Errorf("status %d, envelope %+v", status, env)
		}
	})
}

// TestServeAnonymousAudit: with H4R_ANONYMOUS_AUDIT=true and no keys, the
// README's pack, asked with explain "all", explains what policy left out,
// and why.
func TestServeAnonymousAudit(t *testing.T) {
	base := startServer(t, "H4R_ANONYMOUS_AUDIT", "true")
	body, err := os.ReadFile(filepath.Join("testdata", "readme-context-pack.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	req["explain"] = h4r.ExplainAll
	if body, err = json.Marshal(req); err != nil {
		t.Fatal(err)
	}
	status, raw := post(t, base+"/v1/context-pack", string(body))
	var p h4r.Pack
	if err := json.Unmarshal(raw, &p); err != nil || status != http.StatusOK {
		t.Fatalf("status %d: %v\n%s", status, err, raw)
	}
	reasons := map[string]string{}
	for _, it := range p.Explainability.Items {
		reasons[it.ID] = it.Reason + " " + it.Detail
	}
	for id, want := range map[string]string{"ci-env-dump-18342": "policy policy: credentials", "sec-pentest-login-enumeration": "policy policy: sensitivity"} {
		if reasons[id] != want {
			t.Errorf("%s: %q, want %q", id, reasons[id], want)
		}
	}
}

func TestIngestCommand(t *testing.T) {
	dir := t.TempDir()
	vars := env(map[string]string{"H4R_DATA_DIR": dir, "H4R_LOG_LEVEL": "error"})
	good := `{"id": "a", "text": "first item"}
{"id": "b", "text": "second item", "links": [{"type": "follows", "target": "a"}]}
`
	tests := []struct {
		name      string
		input     string
		wantErr   string   // in the returned error
		wantLines []string // in stderr
	}{
		{"bad line is reported with its number", good + `{"id": "c", "text": "x", "metadata": {"trust": 7}}` + "\n", "1 bad line", []string{"-:3:", "metadata.trust"}},
		{"malformed JSON", `{"id": "c", "text": ` + "\n", "1 bad line", []string{"-:1:", "malformed JSON"}},
		{"good file", good, "", []string{"ingested 2/2 items"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"ingest", "-"}, strings.NewReader(tt.input), &stdout, &stderr, vars)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			for _, l := range tt.wantLines {
				if !strings.Contains(stderr.String(), l) {
					t.Errorf("stderr %q does not contain %q", stderr.String(), l)
				}
			}
		})
	}
	// Only the good file was written: the bad ones wrote nothing, so "c"
	// does not exist and the pack finds a and b.
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"pack", "item", "--json", "--type", "keyword"}, nil, &stdout, &stderr, vars); err != nil {
		t.Fatalf("pack: %v (%s)", err, stderr.String())
	}
	var p h4r.Pack
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range p.Results {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "a,b" && strings.Join(ids, ",") != "b,a" {
		t.Errorf("pack found %v, want a and b only", ids)
	}
}

func TestPackCommandReadable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	vars := env(map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error"})
	err := run(context.Background(), []string{"pack", "login test failures with selector issues", "--demo", "--specialist", "playwright_healer", "--level", "internal", "--groups", "qa", "--max-tokens", "2500", "--explain", "all"}, nil, &stdout, &stderr, vars)
	if err != nil {
		t.Fatalf("%v (%s)", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"Context pack for playwright_healer (internal)", "TL;DR", "Evidence", "relevance", "█", "Suggested actions", "Left out", "policy", "budget_tokens", "Causal graph"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCommandsAllDispatch: every command the unknown-command message and
// the completion scripts list is one dispatch runs, and --help works on
// each (it prints help and is no error).
func TestCommandsAllDispatch(t *testing.T) {
	for _, name := range commands {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(context.Background(), []string{name, "--help"}, strings.NewReader(""), &stdout, &stderr, env(map[string]string{"H4R_DATA_DIR": t.TempDir()}))
			var unknown unknownCommand
			if errors.As(err, &unknown) {
				t.Fatalf("%s is listed but not dispatched", name)
			}
			if err != nil {
				t.Fatalf("%s --help: %v", name, err)
			}
			if !strings.Contains(stdout.String()+stderr.String(), "sage") {
				t.Errorf("%s --help printed no usage:\n%s%s", name, stdout.String(), stderr.String())
			}
		})
	}
}

// TestCompletionScripts: each shell's script names every command.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			var stdout strings.Builder
			if err := run(context.Background(), []string{"completion", shell}, nil, &stdout, io.Discard, env(nil)); err != nil {
				t.Fatal(err)
			}
			for _, c := range commands {
				if !strings.Contains(stdout.String(), c) {
					t.Errorf("the %s script lacks %q", shell, c)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"no subcommand", nil, nil, "missing subcommand"},
		{"unknown command", []string{"fly"}, nil, `unknown command "fly"; the commands are: serve, pack`},
		{"level without specialist", []string{"pack", "q", "--level", "confidential"}, nil, "give its id with --specialist"},
		{"groups without specialist", []string{"query", "--preset", "decisions_by_epic", "--groups", "ops"}, nil, "give its id with --specialist"},
		{"unknown shell", []string{"completion", "tcsh"}, nil, `unknown shell "tcsh"`},
		{"pack without query", []string{"pack"}, nil, "pack takes one query"},
		{"bad level", []string{"pack", "q", "--specialist", "x", "--level", "secret"}, nil, "--level"},
		{"bad variable", []string{"pack", "q"}, map[string]string{"H4R_WEIGHT_TRUST": "abc"}, "H4R_WEIGHT_TRUST"},
		{"non-loopback address", []string{"serve", "--addr", "0.0.0.0:8080"}, nil, "not a loopback address"},
		{"unreachable backend", []string{"pack", "q"}, map[string]string{"NEO4J_URL": "bolt://127.0.0.1:1"}, "NEO4J_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"H4R_DATA_DIR": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			err := run(context.Background(), tt.args, nil, io.Discard, io.Discard, env(vars))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
