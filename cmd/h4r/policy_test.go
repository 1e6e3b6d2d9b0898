package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/golden"
)

var updatePolicy = flag.Bool("update-policy", false, "rewrite the h4r policy golden files in testdata/policy")

const brokenPolicy = "package cmo.context\n\ndefault allow := false\n\nallow if {\n\tinput.item.kind ==\n}\n"

// policyDirs writes the fixtures of the policy command tests: a copy of
// the bundled policy with a wrong rule (one test fails), one that does not
// parse, one without tests, and the bundled policy as a bundle.
func policyDirs(t *testing.T) map[string]string {
	t.Helper()
	root := t.TempDir()
	src, err := os.ReadFile("../../policy/rego/context.rego")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("../../policy/rego/context_test.rego")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	write := func(dir string, files map[string]string) {
		dirs[dir] = filepath.Join(root, dir)
		for name, body := range files {
			p := filepath.Join(root, dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("good", map[string]string{"context.rego": string(src), "context_test.rego": string(tests)})
	write("wrong", map[string]string{"context.rego": strings.Replace(string(src), "metadata.trust < 0.3", "metadata.trust < 0.2", 1), "context_test.rego": string(tests)})
	write("broken", map[string]string{"context.rego": brokenPolicy})
	write("untested", map[string]string{"context.rego": string(src)})

	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{"cmo/context.rego": string(src), "cmo/context_test.rego": string(tests)} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	dirs["bundle"] = filepath.Join(root, "policy.tar.gz")
	if err := os.WriteFile(dirs["bundle"], buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestPolicyCommands(t *testing.T) {
	dirs := policyDirs(t)
	const fixtures = "testdata/policy/"
	cases := []struct {
		name       string
		args       []string
		env        map[string]string
		wantOut    []string // substrings of stdout
		wantErr    string   // substring of the error; "" for success
		wantField  string   // the *h4r.Error's field, when set
		wantUsage  bool
		wantGolden string // stdout golden file under testdata/policy
	}{
		{name: "check the bundled policy", args: []string{"check"}, wantOut: []string{"ok: the bundled policy compiles (1 modules, revision "}},
		{name: "check a directory", args: []string{"check", dirs["good"]}, wantOut: []string{"ok: " + dirs["good"] + " compiles"}},
		{name: "check a bundle", args: []string{"check", dirs["bundle"]}, wantOut: []string{"compiles (1 modules"}},
		{name: "check SCS_POLICY_DIR", args: []string{"check"}, env: map[string]string{"SCS_POLICY_DIR": dirs["broken"]}, wantErr: "rego_parse_error", wantField: filepath.Join(dirs["broken"], "context.rego") + ":7:1"},
		{name: "check a broken policy", args: []string{"check", dirs["broken"]}, wantErr: "rego_parse_error", wantField: filepath.Join(dirs["broken"], "context.rego") + ":7:1"},
		{name: "check a missing directory", args: []string{"check", filepath.Join(dirs["good"], "absent")}, wantErr: "reading policy directory", wantField: "policyDir"},
		{name: "check two paths", args: []string{"check", "a", "b"}, wantErr: "at most one", wantUsage: true},
		{name: "test the bundled policy with coverage", args: []string{"test", "--coverage"}, wantOut: []string{"PASS: 27/27", "coverage: "}},
		{name: "test a bundle", args: []string{"test", dirs["bundle"]}, wantOut: []string{"PASS: 27/27"}},
		{name: "test a wrong rule", args: []string{"test", dirs["wrong"]}, wantOut: []string{"test_low_trust_denied: FAIL", "FAIL: 1/27"}, wantErr: "policy tests failed: 1 of 27"},
		{name: "test -v lists every test", args: []string{"test", "-v", dirs["good"]}, wantOut: []string{"test_plain_item_allowed: PASS", "test_credentials_denied"}},
		{name: "test a broken policy", args: []string{"test", dirs["broken"]}, wantErr: "rego_parse_error", wantField: filepath.Join(dirs["broken"], "context.rego") + ":7:1"},
		{name: "test without tests", args: []string{"test", dirs["untested"]}, wantErr: "holds no *_test.rego files"},
		{name: "eval credentials with explain", args: []string{"eval", "--specialist", fixtures + "specialist.json", "--item", fixtures + "item-credentials.json", "--explain"}, wantGolden: "eval-credentials-explain.golden"},
		{name: "eval pii", args: []string{"eval", "--specialist", fixtures + "specialist.json", "--item", fixtures + "item-pii.json"}, wantGolden: "eval-pii.golden"},
		{name: "eval with a broken policy", args: []string{"eval", "--specialist", fixtures + "specialist.json", "--item", fixtures + "item-pii.json", "--policy", dirs["broken"]}, wantErr: "rego_parse_error"},
		{name: "eval without an item", args: []string{"eval", "--specialist", fixtures + "specialist.json"}, wantErr: "needs --specialist S.json and --item I.json", wantUsage: true},
		{name: "eval a bad specialist", args: []string{"eval", "--specialist", fixtures + "item-pii.json", "--item", fixtures + "item-pii.json"}, wantErr: "unknown field", wantField: fixtures + "item-pii.json.kind"},
		{name: "no subcommand", args: nil, wantErr: "needs a subcommand", wantUsage: true},
		{name: "unknown subcommand", args: []string{"lint"}, wantErr: `unknown policy subcommand "lint"`, wantUsage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"policy"}, tc.args...), nil, &stdout, &stderr, env(tc.env))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v; stdout:\n%s", err, stdout.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.wantField != "" {
				var herr *h4r.Error
				if !errors.As(err, &herr) || herr.Field != tc.wantField {
					t.Errorf("error %v: field %q, want %q", err, fieldOf(err), tc.wantField)
				}
			}
			if got := exitCode(err) == 2; err != nil && got != tc.wantUsage {
				t.Errorf("exit code %d for %v, want usage error %v", exitCode(err), err, tc.wantUsage)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if tc.wantGolden != "" {
				golden.Text(t, fixtures+tc.wantGolden, stdout.Bytes(), *updatePolicy)
			}
		})
	}
}

func fieldOf(err error) string {
	var herr *h4r.Error
	if errors.As(err, &herr) {
		return herr.Field
	}
	return ""
}
