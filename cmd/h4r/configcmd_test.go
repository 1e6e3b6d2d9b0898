package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigSources: each setting a flag of h4r config (serve's flags)
// sets gives the same effective value from the file, the environment or
// the flag, and h4r config names its source; the flag beats the
// environment, which beats the file.
func TestConfigSources(t *testing.T) {
	dir := t.TempDir()
	settings := []struct {
		variable, flag, value, def string
		other                      string // a valid value the winner must hide
	}{
		{"H4R_ADDR", "--addr", "127.0.0.1:9091", "127.0.0.1:8080", "127.0.0.1:9092"},
		{"H4R_DATA_DIR", "--data-dir", dir, "./data", "/elsewhere"},
		{"SCS_POLICY_DIR", "--policy-dir", dir, "", "/elsewhere"},
		{"H4R_API_KEYS_FILE", "--api-keys-file", filepath.Join(dir, "keys.json"), "", "/elsewhere.json"},
	}
	sources := []struct {
		name       string
		give       func(file, variable, flag, value, other string) ([]string, map[string]string)
		wantSource string
	}{
		{"default", func(_, _, _, _, _ string) ([]string, map[string]string) { return nil, nil }, "default"},
		{"file by flag", func(file, _, _, _, _ string) ([]string, map[string]string) {
			return []string{"--config", file}, nil
		}, "file"},
		{"file by variable", func(file, _, _, _, _ string) ([]string, map[string]string) {
			return nil, map[string]string{"H4R_CONFIG": file}
		}, "file"},
		{"environment", func(_, variable, _, value, _ string) ([]string, map[string]string) {
			return nil, map[string]string{variable: value}
		}, "environment"},
		{"environment over file", func(file, variable, _, value, _ string) ([]string, map[string]string) {
			return []string{"--config", file + ".other"}, map[string]string{variable: value}
		}, "environment"},
		{"flag", func(_, _, flag, value, _ string) ([]string, map[string]string) {
			return []string{flag, value}, nil
		}, "flag"},
		{"flag over environment and file", func(file, variable, flag, value, other string) ([]string, map[string]string) {
			return []string{"--config", file + ".other", flag, value}, map[string]string{variable: other}
		}, "flag"},
	}
	for _, s := range settings {
		file := filepath.Join(t.TempDir(), "h4r.yaml")
		if err := os.WriteFile(file, []byte(strings.ToLower(s.variable)+": "+s.value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The same key with another value, for the cases where the
		// environment or a flag must win over the file.
		if err := os.WriteFile(file+".other", []byte(strings.ToLower(s.variable)+": "+s.other+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, src := range sources {
			t.Run(s.variable+"/"+src.name, func(t *testing.T) {
				args, vars := src.give(file, s.variable, s.flag, s.value, s.other)
				var out strings.Builder
				args = append([]string{"config", "--json"}, args...)
				if err := run(context.Background(), args, nil, &out, io.Discard, env(vars)); err != nil {
					t.Fatalf("h4r %q: %v", args, err)
				}
				var rows []struct{ Name, Value, Source string }
				if err := json.Unmarshal([]byte(out.String()), &rows); err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				want := s.value
				if src.wantSource == "default" {
					want = s.def
				}
				for _, r := range rows {
					if r.Name != s.variable {
						continue
					}
					if r.Value != want || r.Source != src.wantSource {
						t.Errorf("%s = %q from %s, want %q from %s", s.variable, r.Value, r.Source, want, src.wantSource)
					}
					return
				}
				t.Fatalf("h4r config printed no %s", s.variable)
			})
		}
	}
}

// settingFlag finds, in a command's help, a flag that sets a variable:
// "--addr STRING ... (H4R_ADDR)".
var settingFlag = regexp.MustCompile(`(?m)^\s+(--[a-z-]+) .*\(([A-Z][A-Z0-9_]+)\)`)

// TestConfigTakesServesSettingFlags: h4r config takes every flag of serve
// that sets a variable, for the same variable, so that it shows what serve
// would run with (and TestConfigSources covers each of them).
func TestConfigTakesServesSettingFlags(t *testing.T) {
	flags := func(command string) map[string]string {
		var out strings.Builder
		if err := run(context.Background(), []string{command, "--help"}, nil, &out, &out, env(nil)); err != nil {
			t.Fatalf("h4r %s --help: %v", command, err)
		}
		m := map[string]string{}
		for _, sub := range settingFlag.FindAllStringSubmatch(out.String(), -1) {
			m[sub[1]] = sub[2]
		}
		return m
	}
	serve, config := flags("serve"), flags("config")
	if len(serve) == 0 {
		t.Fatal("h4r serve --help lists no flag that sets a variable")
	}
	if !maps.Equal(serve, config) {
		t.Errorf("serve's setting flags %v, config's %v: want the same", serve, config)
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
