package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// debugAddrLogged is the address h4r serve logged for its profiling
// listener, "" when it logged none.
func debugAddrLogged(t *testing.T, logs []byte) string {
	t.Helper()
	for line := range bytes.Lines(logs) {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "serving Go's runtime profiles" {
			return rec.Addr
		}
	}
	return ""
}

func TestServeProfilesOnDebugAddr(t *testing.T) {
	base, logs := startServe(t, map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_DEBUG_ADDR": "127.0.0.1:0"})
	addr := debugAddrLogged(t, []byte(logs.String()))
	if addr == "" {
		t.Fatalf("h4r serve with H4R_DEBUG_ADDR logged no profiling listener:\n%s", logs.String())
	}
	debug := "http://" + addr
	tests := []struct {
		name, url string
		status    int
		want      string // in the body
	}{
		{"index lists the profiles", debug + "/debug/pprof/", http.StatusOK, "heap"},
		{"heap as text", debug + "/debug/pprof/heap?debug=1", http.StatusOK, "# runtime.MemStats"},
		{"goroutines name the server's", debug + "/debug/pprof/goroutine?debug=1", http.StatusOK, "net/http.(*Server).Serve"},
		{"a CPU profile, gzipped protobuf", debug + "/debug/pprof/profile?seconds=1", http.StatusOK, "\x1f\x8b"},
		{"the API is not on it", debug + "/v1/policy", http.StatusNotFound, ""},
		{"the profiles are not on the API", base + "/debug/pprof/heap", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := httpDo(t, "GET", tt.url, nil)
			if status != tt.status || !strings.Contains(string(body), tt.want) {
				t.Errorf("GET %s: %d, want %d with %q; body starts %.200q", tt.url, status, tt.status, tt.want, body)
			}
		})
	}
}

func TestServeWithoutDebugAddrHasNoProfiles(t *testing.T) {
	_, logs := startServe(t, map[string]string{"H4R_DATA_DIR": t.TempDir()})
	if addr := debugAddrLogged(t, []byte(logs.String())); addr != "" {
		t.Errorf("h4r serve without H4R_DEBUG_ADDR serves profiles on %s", addr)
	}
}

func TestStartDebugStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, stop, err := startDebug(ctx, "127.0.0.1:0", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if status, _ := httpDo(t, "GET", "http://"+addr+"/debug/pprof/", nil); status != http.StatusOK {
		t.Fatalf("the profiling listener answered %d before its context ended", status)
	}
	cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	eventually(t, "the profiling listener closes with its context", func() bool {
		res, err := client.Get("http://" + addr + "/debug/pprof/")
		if err == nil {
			res.Body.Close()
		}
		return err != nil
	})
}

func TestStartDebugOnATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, _, err = startDebug(context.Background(), taken.Addr().String(), quietLog())
	if err == nil || !strings.Contains(err.Error(), "H4R_DEBUG_ADDR "+taken.Addr().String()) {
		t.Errorf("a port another listener holds: err = %v, want one naming H4R_DEBUG_ADDR and the address", err)
	}
}
