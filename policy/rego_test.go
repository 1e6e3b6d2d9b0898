package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// runRegoTests runs the Rego unit tests among files (name to source) with
// OPA's tester and returns every result.
func runRegoTests(t *testing.T, files map[string]string) []*tester.Result {
	t.Helper()
	modules := map[string]*ast.Module{}
	for name, src := range files {
		mod, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		modules[name] = mod
	}
	ctx := t.Context()
	store := inmem.New()
	txn := storage.NewTransactionOrDie(ctx, store)
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().SetStore(store).SetModules(modules).RunTests(ctx, txn)
	if err != nil {
		t.Fatalf("running Rego tests: %v", err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	return results
}

func bundledWithTests(t *testing.T) map[string]string {
	t.Helper()
	tests, err := os.ReadFile("rego/context_test.rego")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{BundledFile: bundledPolicy, "rego/context_test.rego": string(tests)}
}

// TestRegoUnitTests makes `go test ./policy/` fail when a Rego unit test of
// the bundled policy fails.
func TestRegoUnitTests(t *testing.T) {
	results := runRegoTests(t, bundledWithTests(t))
	// The test file holds one test per rule and boundary; fewer results
	// means the runner did not find them.
	if len(results) < 20 {
		t.Fatalf("ran %d Rego tests, want at least 20", len(results))
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("Rego test %s.%s failed: %v (failed at %v)", r.Package, r.Name, r.Error, r.FailedAt)
		}
	}
}

// TestRegoUnitTestsReportFailures checks the harness above: a wrong
// expectation in Rego must come back as a failed result.
func TestRegoUnitTestsReportFailures(t *testing.T) {
	files := bundledWithTests(t)
	files["wrong_test.rego"] = `package cmo.wrong_test

import data.cmo.context

test_credentials_wrongly_expected_allowed if {
	context.allow with input as {"specialist": {"securityLevel": "restricted"}, "item": {"metadata": {"hasCredentials": true}}}
}
`
	var failed []string
	for _, r := range runRegoTests(t, files) {
		if !r.Pass() {
			failed = append(failed, r.Name)
		}
	}
	if strings.Join(failed, ",") != "test_credentials_wrongly_expected_allowed" {
		t.Fatalf("failed tests = %v, want only test_credentials_wrongly_expected_allowed", failed)
	}
}
