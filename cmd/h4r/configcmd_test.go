package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigSources: one setting given by the file, the environment or a
// flag gives the same effective value, and h4r config names its source.
func TestConfigSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "h4r.yaml")
	if err := os.WriteFile(file, []byte("h4r_data_dir: "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		vars       map[string]string
		wantSource string
	}{
		{"default", nil, nil, "default"},
		{"file by flag", []string{"--config", file}, nil, "file"},
		{"file by variable", nil, map[string]string{"H4R_CONFIG": file}, "file"},
		{"environment", nil, map[string]string{"H4R_DATA_DIR": dir}, "environment"},
		{"flag", []string{"--data-dir", dir}, nil, "flag"},
		{"flag over environment and file", []string{"--config", file, "--data-dir", dir}, map[string]string{"H4R_DATA_DIR": "/elsewhere"}, "flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			args := append([]string{"config", "--json"}, tt.args...)
			if err := run(context.Background(), args, nil, &out, io.Discard, env(tt.vars)); err != nil {
				t.Fatal(err)
			}
			var rows []struct{ Name, Value, Source string }
			if err := json.Unmarshal([]byte(out.String()), &rows); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, r := range rows {
				if r.Name != "H4R_DATA_DIR" {
					continue
				}
				want := dir
				if tt.wantSource == "default" {
					want = "./data"
				}
				if r.Value != want || r.Source != tt.wantSource {
					t.Errorf("H4R_DATA_DIR = %q from %s, want %q from %s", r.Value, r.Source, want, tt.wantSource)
				}
				return
			}
			t.Fatal("h4r config printed no H4R_DATA_DIR")
		})
	}
}

// TestConfigMasksSecrets: a secret and a URL's password never reach the
// output.
func TestConfigMasksSecrets(t *testing.T) {
	var out strings.Builder
	vars := map[string]string{"H4R_GITHUB_WEBHOOK_SECRET": "hush-1234", "DATABASE_URL": "postgres://h4r:pw-5678@127.0.0.1:1/h4r"}
	if err := run(context.Background(), []string{"config"}, nil, &out, io.Discard, env(vars)); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hush-1234", "pw-5678"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("h4r config printed %q:\n%s", secret, out.String())
		}
	}
}

// TestHealth: h4r health exits 0 against a live server and fails against
// an address nothing listens on.
func TestHealth(t *testing.T) {
	base, _ := docsServer(t)
	addr := strings.TrimPrefix(base, "http://")
	if err := run(context.Background(), []string{"health", "--addr", addr}, nil, io.Discard, io.Discard, env(nil)); err != nil {
		t.Errorf("against a live server: %v", err)
	}
	if err := run(context.Background(), []string{"health", "--addr", "127.0.0.1:1", "--timeout", "1s"}, nil, io.Discard, io.Discard, env(nil)); err == nil {
		t.Error("against a closed port: no error")
	}
}

// TestBackupCommand: h4r backup copies the demo store into a file that
// opens as a store with the same items, refuses to overwrite, and refuses
// a Postgres configuration.
func TestBackupCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	vars := map[string]string{"H4R_DATA_DIR": dir}
	if err := run(ctx, []string{"pack", "login", "--demo"}, nil, io.Discard, io.Discard, env(vars)); err != nil {
		t.Fatalf("loading the demo: %v", err)
	}
	out := filepath.Join(t.TempDir(), "copy.db")
	var stdout strings.Builder
	if err := run(ctx, []string{"backup", out}, nil, &stdout, io.Discard, env(vars)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "backed up") {
		t.Errorf("output %q", stdout.String())
	}
	copyDir := t.TempDir()
	if err := os.Rename(out, filepath.Join(copyDir, "h4r.db")); err != nil {
		t.Fatal(err)
	}
	var packOut strings.Builder
	if err := run(ctx, []string{"pack", "login test failures", "--json"}, nil, &packOut, io.Discard, env(map[string]string{"H4R_DATA_DIR": copyDir})); err != nil {
		t.Fatalf("a pack from the backup: %v", err)
	}
	if !strings.Contains(packOut.String(), `"results"`) || strings.Contains(packOut.String(), `"results": []`) {
		t.Errorf("the backup answers no results:\n%.400s", packOut.String())
	}
	if err := run(ctx, []string{"backup", filepath.Join(copyDir, "h4r.db")}, nil, io.Discard, io.Discard, env(vars)); err == nil {
		t.Error("a backup over an existing file: no error")
	}
	vars["DATABASE_URL"] = "postgres://h4r@127.0.0.1:1/h4r"
	if err := run(ctx, []string{"backup", out}, nil, io.Discard, io.Discard, env(vars)); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("with DATABASE_URL: %v, want a pointer to pg_dump", err)
	}
}
