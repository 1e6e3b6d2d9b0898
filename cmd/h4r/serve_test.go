package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// patience bounds every wait on a server: generous, because the tests run
// on loaded 2-core machines under -race; no test asserts timing.
const patience = 3 * time.Minute

// TestServeExposure checks the rule that keeps the unauthenticated demo
// private: without API keys, a non-loopback address is refused unless
// --insecure is given. Every case here fails before listening, so the
// test never opens a port beyond loopback.
func TestServeExposure(t *testing.T) {
	badKeys := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badKeys, []byte(`[{"sha256": "the-key-itself", "principal": {"id": "x"}, "routes": ["read"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want string // in the error
	}{
		{"all interfaces without keys", []string{"--addr", "0.0.0.0:0"}, nil, "--insecure"},
		{"a LAN address without keys", []string{"--addr", "192.0.2.10:8080"}, nil, "no API keys"},
		{"a host name without keys", []string{"--addr", "example.com:8080"}, nil, "not a loopback address"},
		{"a keys file that holds a key, not its hash", []string{"--addr", "0.0.0.0:0"}, map[string]string{"H4R_API_KEYS_FILE": badKeys}, "[0].sha256"},
		{"a missing keys file", []string{"--api-keys-file", filepath.Join(t.TempDir(), "none.json")}, nil, "H4R_API_KEYS_FILE"},
		{"an address without a port", []string{"--addr", "127.0.0.1"}, nil, "H4R_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"H4R_DATA_DIR": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := cmdServe(ctx, tt.args, io.Discard, env(vars), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("serve %v: %v, want an error mentioning %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestServeWithKeys runs the real serve command with a keys file: the
// probes need no key, a context pack does, and the key's principal is the
// specialist.
func TestServeWithKeys(t *testing.T) {
	const key, adminKey = "serve-test-key", "serve-test-admin-key"
	sum, adminSum := sha256.Sum256([]byte(key)), sha256.Sum256([]byte(adminKey))
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(`[{"sha256": "`+hex.EncodeToString(sum[:])+`", "principal": {"id": "playwright_healer", "securityLevel": "internal", "authorizedGroups": ["qa"]}, "routes": ["read"]},
		{"sha256": "`+hex.EncodeToString(adminSum[:])+`", "principal": {"id": "operator", "securityLevel": "internal"}, "routes": ["admin"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	vars := map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "warn", "H4R_API_KEYS_FILE": keysFile,
		"H4R_GENERATOR_TIMEOUT_MS": "60000", "H4R_REQUEST_TIMEOUT_MS": "60000"}
	go func() {
		done <- cmdServe(ctx, []string{"--demo", "--addr", "127.0.0.1:0"}, io.Discard, env(vars), ready)
	}()
	var base string
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v", err)
	case <-time.After(patience):
		cancel()
		t.Fatal("serve did not listen")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	body := `{"query": {"text": "login test failures with selector issues"}}`
	tests := []struct {
		name   string
		method string
		path   string
		key    string
		pad    int // bytes of an extra header
		status int
	}{
		{"live without a key", http.MethodGet, "/health/live", "", 0, http.StatusOK},
		{"ready without a key", http.MethodGet, "/health/ready", "", 0, http.StatusOK},
		{"a pack without a key", http.MethodPost, "/v1/context-pack", "", 0, http.StatusUnauthorized},
		{"a pack with the key", http.MethodPost, "/v1/context-pack", key, 0, http.StatusOK},
		{"metrics with a read key", http.MethodGet, "/metrics", key, 0, http.StatusForbidden},
		{"metrics with an admin key", http.MethodGet, "/metrics", adminKey, 0, http.StatusOK},
		// net/http answers this itself; the server's Listener puts it in
		// the error shape (before: 431 in plain text).
		{"headers over 64 KiB", http.MethodGet, "/health/live", "", 100 << 10, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader
			if tt.method == http.MethodPost {
				r = strings.NewReader(body)
			}
			req, err := http.NewRequest(tt.method, base+tt.path, r)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			if tt.key != "" {
				req.Header.Set("Authorization", "Bearer "+tt.key)
			}
			if tt.pad > 0 {
				req.Header.Set("X-Pad", strings.Repeat("p", tt.pad))
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, b)
			}
			var shape struct {
				Error *struct{ Code, Message string } `json:"error"`
			}
			if tt.status >= 400 && (json.Unmarshal(b, &shape) != nil || shape.Error == nil || shape.Error.Code == "") {
				t.Errorf("an error answer not in the error shape: %s", b)
			}
			if tt.status == http.StatusOK && tt.path == "/v1/context-pack" && !strings.Contains(string(b), `"specialistId":"playwright_healer"`) {
				t.Errorf("the pack is not made for the key's principal: %.300s", b)
			}
			if tt.status == http.StatusOK && tt.path == "/metrics" {
				// serve wires the store's item cache: the pack before read
				// its hits through it.
				m := metricValues(b)
				if m["h4r_item_cache_items"] <= 0 || m["h4r_item_cache_bytes"] <= 0 || m["h4r_item_cache_hits_total"]+m["h4r_item_cache_misses_total"] <= 0 {
					t.Errorf("item cache metrics after a pack: items %v, bytes %v, hits %v, misses %v; want the cache's figures",
						m["h4r_item_cache_items"], m["h4r_item_cache_bytes"], m["h4r_item_cache_hits_total"], m["h4r_item_cache_misses_total"])
				}
			}
		})
	}
}

// TestServeWithoutKeysGuardsBrowsers checks that serve wires the server's
// browser guard and its Listener: without keys, a request
// addressed to another name (DNS rebinding) or from a foreign page is
// refused, and what net/http answers itself (a bad escape in the path) is
// in the error shape.
func TestServeWithoutKeysGuardsBrowsers(t *testing.T) {
	base := startServer(t)
	tests := []struct {
		name   string
		host   string
		origin string
		status int
	}{
		{"loopback", "", "", http.StatusOK},
		{"a rebinding name", "evil.example", "", http.StatusForbidden},
		{"a foreign page", "", "https://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, base+"/health/live", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, b)
			}
		})
	}
	t.Run("a bad escape in the path", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(patience))
		if _, err := io.WriteString(conn, "GET /v1/items/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var shape struct {
			Error *struct{ Code string } `json:"error"`
		}
		if res.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &shape) != nil || shape.Error == nil || shape.Error.Code != "invalid_argument" {
			t.Errorf("status %d %s, want 400 invalid_argument in the error shape", res.StatusCode, b)
		}
	})
}

// metricValues reads the unlabelled series of a Prometheus text answer.
func metricValues(body []byte) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// TestServeStoppedWhileStarting: a stop asked for while the service opens
// (SIGTERM in a rolling restart) ends serve without an error, and says so;
// a store that cannot open is still an error.
func TestServeStoppedWhileStarting(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("not a data directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dataDir string
		stopped bool   // the context is cancelled before serve starts
		wantErr string // "": serve returns nil
		wantLog string
	}{
		{"stopped before the store opens", t.TempDir(), true, "", "h4r stopped before serving"},
		{"a data directory that is a file", notADir, false, notADir, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.stopped {
				cancel()
			}
			var stderr strings.Builder
			ready := make(chan string, 1)
			err := cmdServe(ctx, []string{"--addr", "127.0.0.1:0"}, &stderr, env(map[string]string{"H4R_DATA_DIR": tt.dataDir}), ready)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("serve: %v, want no error\n%s", err, stderr.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("serve: %v, want an error mentioning %q", err, tt.wantErr)
			}
			if !strings.Contains(stderr.String(), tt.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tt.wantLog, stderr.String())
			}
			select {
			case addr := <-ready:
				t.Errorf("serve listened on %s", addr)
			default:
			}
		})
	}
}
