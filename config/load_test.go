package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
)

// emptyConfigFile is a file that sets nothing.
const emptyConfigFile = "testdata/empty.yaml"

// writeFile writes a configuration file and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h4r.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFileAndEnvironmentAgree: a setting written in the file gives the
// configuration the same setting in the environment gives, in every form
// the variables take (durations and their _MS aliases, lists).
func TestFileAndEnvironmentAgree(t *testing.T) {
	tests := []struct {
		name, key, fileValue, envValue string
		want                           func(*config.Config)
	}{
		{"address", "H4R_ADDR", "127.0.0.1:9090", "127.0.0.1:9090", func(c *config.Config) { c.Addr = "127.0.0.1:9090" }},
		{"lower-case key", "h4r_data_dir", "/srv/h4r", "/srv/h4r", func(c *config.Config) { c.DataDir = "/srv/h4r" }},
		{"duration", "H4R_REQUEST_TIMEOUT", "3s", "3s", func(c *config.Config) { c.RequestTimeout = 3 * time.Second }},
		{"duration alias in milliseconds", "H4R_REQUEST_TIMEOUT_MS", "1500", "1500", func(c *config.Config) { c.RequestTimeout = 1500 * time.Millisecond }},
		{"number", "H4R_WEIGHT_TRUST", "0.3", "0.3", func(c *config.Config) { c.Weights[h4r.Trust] = 0.3 }},
		{"boolean", "CONTEXT_PACK_INCLUDE_GRAPH", "true", "true", func(c *config.Config) { c.IncludeGraph = true }},
		{"list", "H4R_CAUSAL_LINK_TYPES", "[caused_by, fixes]", "caused_by,fixes", func(c *config.Config) { c.CausalLinkTypes = "caused_by,fixes" }},
		{"design name", "SCS_MAX_TOKENS_DEFAULT", "4000", "4000", func(c *config.Config) { c.MaxTokensDefault = 4000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.key+": "+tt.fileValue+"\n")
			fromFile, err := config.Load(env(map[string]string{"H4R_CONFIG": path}))
			if err != nil {
				t.Fatalf("from the file: %v", err)
			}
			fromEnv, err := config.Load(env(map[string]string{strings.ToUpper(tt.key): tt.envValue}))
			if err != nil {
				t.Fatalf("from the environment: %v", err)
			}
			want := config.Default()
			tt.want(&want)
			fromFile.Config.ConfigFile = ""
			if fromFile.Config != want || fromEnv.Config != want {
				t.Errorf("file gives %+v\nenvironment gives %+v\nwant %+v", fromFile.Config, fromEnv.Config, want)
			}
			name := strings.TrimSuffix(strings.ToUpper(tt.key), "_MS")
			if fromFile.Sources[name] != config.SourceFile || fromEnv.Sources[name] != config.SourceEnv {
				t.Errorf("sources of %s: file %q, environment %q", name, fromFile.Sources[name], fromEnv.Sources[name])
			}
		})
	}
}

// TestEnvironmentOverridesFile: the environment wins, and the sources say
// which value came from where.
func TestEnvironmentOverridesFile(t *testing.T) {
	path := writeFile(t, "h4r_addr: 127.0.0.1:9090\nh4r_log_level: debug\n")
	l, err := config.Load(env(map[string]string{"H4R_CONFIG": path, "H4R_ADDR": "127.0.0.1:7070"}))
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Addr != "127.0.0.1:7070" || l.Config.LogLevel != "debug" {
		t.Errorf("addr %q, log level %q: want the environment's address and the file's level", l.Config.Addr, l.Config.LogLevel)
	}
	for name, want := range map[string]config.Source{"H4R_ADDR": config.SourceEnv, "H4R_LOG_LEVEL": config.SourceFile, "H4R_DATA_DIR": config.SourceDefault} {
		if l.Sources[name] != want {
			t.Errorf("source of %s = %q, want %q", name, l.Sources[name], want)
		}
	}
}

// TestFileErrors: what is wrong in a file is named, with its line.
func TestFileErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"unknown key", "h4r_adr: 127.0.0.1:9090\n", `line 1: unknown key "h4r_adr" (did you mean h4r_addr?)`},
		{"unknown key far from any", "colour: blue\n", `unknown key "colour"`},
		{"key set twice", "h4r_addr: 127.0.0.1:1\nH4R_ADDR: 127.0.0.1:2\n", "line 2: H4R_ADDR is set twice"},
		{"nested mapping", "h4r_addr:\n  host: x\n", "want a plain value or a list, got a mapping"},
		{"not a mapping", "- a\n- b\n", "want a mapping of variable names to values"},
		{"not YAML", "h4r_addr: [\n", "not YAML"},
		{"bad value", "h4r_request_timeout: soon\n", `H4R_REQUEST_TIMEOUT: want a duration`},
		{"duration without a unit", "h4r_request_timeout: 1500\n", "a number needs a unit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(env(map[string]string{"H4R_CONFIG": writeFile(t, tt.text)}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestSecretFromFile: a secret given as NAME_FILE is read from the file,
// and a file that is not there is an error naming NAME_FILE.
func TestSecretFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("hush\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(env(map[string]string{"H4R_GITHUB_WEBHOOK_SECRET_FILE": path}))
	if err != nil || l.Config.GitHubWebhookSecret != "hush" {
		t.Fatalf("secret %q, error %v; want hush", l.Config.GitHubWebhookSecret, err)
	}
	_, err = config.Load(env(map[string]string{"H4R_GITHUB_WEBHOOK_SECRET_FILE": path + ".missing"}))
	if err == nil || !strings.Contains(err.Error(), "H4R_GITHUB_WEBHOOK_SECRET_FILE") {
		t.Errorf("error = %v, want one naming H4R_GITHUB_WEBHOOK_SECRET_FILE", err)
	}
	// Only secrets take _FILE: another variable's is not read.
	l, err = config.Load(env(map[string]string{"H4R_ADDR_FILE": path}))
	if err != nil || l.Config.Addr != config.Default().Addr {
		t.Errorf("H4R_ADDR_FILE changed the address to %q (error %v)", l.Config.Addr, err)
	}
}

// TestMissingFile: a file that is not there is an error naming H4R_CONFIG.
func TestMissingFile(t *testing.T) {
	_, err := config.Load(env(map[string]string{"H4R_CONFIG": filepath.Join(t.TempDir(), "nope.yaml")}))
	if err == nil || !strings.Contains(err.Error(), "H4R_CONFIG") {
		t.Errorf("error = %v, want one naming H4R_CONFIG", err)
	}
}

// TestDisplayMasksSecrets: h4r config never prints a secret or a URL's
// password.
func TestDisplayMasksSecrets(t *testing.T) {
	vars := map[string]config.Var{}
	for _, v := range config.Vars() {
		vars[v.Name] = v
	}
	tests := []struct{ name, value, want string }{
		{"H4R_GITHUB_WEBHOOK_SECRET", "s3cret", "(set, hidden)"},
		{"H4R_EMBED_API_KEY", "sk-abc", "(set, hidden)"},
		{"DATABASE_URL", "postgres://h4r:pw@db:5432/h4r", "postgres://h4r:xxxxx@db:5432/h4r"},
		{"H4R_ADDR", "127.0.0.1:8080", "127.0.0.1:8080"},
		{"H4R_EMBED_API_KEY", "", ""},
	}
	for _, tt := range tests {
		if got := config.Display(vars[tt.name], tt.value); got != tt.want {
			t.Errorf("Display(%s, %q) = %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

// FuzzParseFile: whatever a file holds, parsing never panics, and every
// error names H4R_CONFIG.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte("h4r_addr: 127.0.0.1:8080\n"))
	f.Add([]byte("h4r_causal_link_types: [a, b]\n"))
	f.Add([]byte("a: {b: c}\n"))
	f.Add([]byte("- x\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		values, err := config.ParseFile(data)
		if err != nil {
			for _, p := range problems(err) {
				if p.Field != "H4R_CONFIG" {
					t.Fatalf("problem names %q, want H4R_CONFIG", p.Field)
				}
			}
			return
		}
		for k := range values {
			if k != strings.ToUpper(k) {
				t.Fatalf("key %q is not upper case", k)
			}
		}
	})
}

// TestConfigurationPageFileExample: the YAML file shown in
// docs/configuration.md loads, each of its keys is taken from the file,
// and it gives the configuration the same settings in the environment
// give.
func TestConfigurationPageFileExample(t *testing.T) {
	page, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "\n```yaml\n")
	example, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatalf("%s shows no ```yaml block", readmePath)
	}
	fromFile, err := config.Load(env(map[string]string{"H4R_CONFIG": writeFile(t, example+"\n")}))
	if err != nil {
		t.Fatalf("loading the example of %s: %v", readmePath, err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(example, "\n") {
		key, value, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("example line %q is not key: value", line)
		}
		if list, ok := strings.CutPrefix(value, "["); ok {
			value = strings.ReplaceAll(strings.TrimSuffix(list, "]"), ", ", ",")
		}
		name := strings.ToUpper(key)
		vars[name] = value
		if fromFile.Sources[name] != config.SourceFile {
			t.Errorf("source of %s = %q, want %q", name, fromFile.Sources[name], config.SourceFile)
		}
	}
	fromEnv, err := config.Load(env(vars))
	if err != nil {
		t.Fatalf("loading the example's settings from the environment: %v", err)
	}
	fromFile.Config.ConfigFile = ""
	if fromFile.Config != fromEnv.Config {
		t.Errorf("the example file gives %+v\nthe environment gives %+v", fromFile.Config, fromEnv.Config)
	}
	if fromFile.Config == config.Default() {
		t.Error("the example file changes nothing")
	}
}
