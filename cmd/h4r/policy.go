package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/jsonstrict"
	"github.com/h4r/h4r/policy"
)

const policyUsage = `Usage:
  h4r policy check [DIR|BUNDLE.tar.gz]              compile the policy; errors as file:line:column
  h4r policy test  [--v] [--coverage] [DIR|BUNDLE]  run its Rego unit tests with OPA's test runner
  h4r policy eval  --specialist S.json --item I.json [--explain] [--policy DIR|BUNDLE]
                                                    print the decision (and which rules fired)

Without a path: SCS_POLICY_DIR, else the bundled policy (and, for test, its tests).
`

// cmdPolicy runs the policy authoring commands.
func cmdPolicy(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return usageError{"policy needs a subcommand: check, test or eval"}
	}
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "check":
		return cmdPolicyCheck(ctx, args[1:], cfg, stdout, stderr)
	case "test":
		return cmdPolicyTest(ctx, args[1:], cfg.PolicyDir, stdout, stderr)
	case "eval":
		return cmdPolicyEval(ctx, args[1:], cfg, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, policyUsage)
		return nil
	}
	fmt.Fprint(stderr, policyUsage)
	return usageError{fmt.Sprintf("unknown policy subcommand %q", args[0])}
}

// policyPath is the one optional positional argument, else the configured
// directory ("" for the bundled policy).
func policyPath(fs *flag.FlagSet, args []string, configured string) (string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	switch len(pos) {
	case 0:
		return configured, nil
	case 1:
		return pos[0], nil
	}
	return "", usageError{fmt.Sprintf("policy %s takes at most one policy directory or bundle, got %q", fs.Name(), pos)}
}

// loadEngine compiles the policy at path as the server would, network
// built-ins refused unless SCS_POLICY_NETWORK allows them.
func loadEngine(ctx context.Context, path string, cfg config.Config) (*policy.Engine, error) {
	opts := []policy.Option{policy.WithNetworkBuiltins(cfg.PolicyNet)}
	if path != "" {
		opts = append(opts, policy.WithPolicyDir(path))
	}
	return policy.New(ctx, opts...)
}

func describePath(path string) string {
	if path == "" {
		return "the bundled policy"
	}
	return path
}

func cmdPolicyCheck(ctx context.Context, args []string, cfg config.Config, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `policy check DIR|BUNDLE`)
	path, err := policyPath(fs, args, cfg.PolicyDir)
	if err != nil {
		return err
	}
	e, err := loadEngine(ctx, path, cfg)
	if err != nil {
		return err // file:line:column: message, from policy.New
	}
	fmt.Fprintf(stdout, "ok: %s compiles (%d modules, revision %s)\n", describePath(path), len(e.Files()), e.Revision())
	return nil
}

// errTestsFailed is returned when a Rego test fails or errors; the report
// has already said which.
var errTestsFailed = errors.New("policy tests failed")

func cmdPolicyTest(ctx context.Context, args []string, configured string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `policy test [flags] DIR|BUNDLE`)
	verbose := fs.Bool("v", false, "print every test, and the lines coverage missed")
	coverage := fs.Bool("coverage", false, "report test coverage of the policy")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline of each test")
	path, err := policyPath(fs, args, configured)
	if err != nil {
		return err
	}
	var files []policy.File
	var data map[string]any
	if path == "" {
		files = policy.Bundled(true)
	} else if files, data, err = policy.Load(path, true); err != nil {
		return err
	}
	modules := map[string]*ast.Module{}
	tests := 0
	for _, f := range files {
		mod, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return parseError(f.Name, err)
		}
		modules[f.Name] = mod
		if f.IsTest() {
			tests++
		}
	}
	if tests == 0 {
		return h4r.Errorf(h4r.EINVALID, "policy", "%s holds no *_test.rego files", describePath(path))
	}
	if data == nil {
		data = map[string]any{}
	}
	store := inmem.NewFromObject(data)
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		return fmt.Errorf("opening the test store: %w", err)
	}
	defer store.Abort(ctx, txn)
	runner := tester.NewRunner().SetStore(store).SetModules(modules).
		SetDefaultRegoVersion(ast.RegoV1).SetTimeout(*timeout).EnableTracing(*verbose)
	var cov *cover.Cover
	if *coverage {
		cov = cover.New()
		runner = runner.SetCoverageQueryTracer(cov)
	}
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return fmt.Errorf("running the Rego tests: %w", err)
	}
	// Collect first, so that the report and the verdict see the same results.
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	// OPA runs tests in parallel; report them in file order.
	slices.SortStableFunc(results, func(a, b *tester.Result) int {
		if c := strings.Compare(a.Location.File, b.Location.File); c != 0 {
			return c
		}
		return a.Location.Row - b.Location.Row
	})
	replay := make(chan *tester.Result, len(results))
	failed := 0
	for _, r := range results {
		if r.Fail || r.Error != nil {
			failed++
		}
		replay <- r
	}
	close(replay)
	if err := (tester.PrettyReporter{Output: stdout, Verbose: *verbose}).Report(replay); err != nil {
		return fmt.Errorf("reporting test results: %w", err)
	}
	if cov != nil {
		printCoverage(stdout, cov.Report(modules), files, *verbose)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d", errTestsFailed, failed, len(results))
	}
	return nil
}

// parseError reports a module that does not parse with file:line:column.
func parseError(name string, err error) error {
	var errs ast.Errors
	if errors.As(err, &errs) && len(errs) > 0 && errs[0].Location != nil {
		l := errs[0].Location
		return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s:%d:%d", l.File, l.Row, l.Col), "%s: %s", errs[0].Code, errs[0].Message)
	}
	return h4r.Errorf(h4r.EINVALID, name, "parsing: %v", err)
}

// printCoverage prints the policy's coverage (test files left out) and,
// verbose, the line ranges no test reached.
func printCoverage(w io.Writer, report cover.Report, files []policy.File, verbose bool) {
	covered, notCovered := 0, 0
	var missed []string
	for _, f := range files {
		if f.IsTest() {
			continue
		}
		fr, ok := report.Files[f.Name]
		if !ok {
			continue
		}
		covered += fr.CoveredLines
		notCovered += fr.NotCoveredLines
		for _, r := range fr.NotCovered {
			missed = append(missed, fmt.Sprintf("  %s:%d-%d", f.Name, r.Start.Row, r.End.Row))
		}
	}
	pct := 100.0
	if covered+notCovered > 0 {
		pct = 100 * float64(covered) / float64(covered+notCovered)
	}
	fmt.Fprintf(w, "coverage: %.1f%% of policy lines (%d of %d)\n", pct, covered, covered+notCovered)
	if verbose && len(missed) > 0 {
		fmt.Fprintf(w, "not covered:\n%s\n", strings.Join(missed, "\n"))
	}
}

func cmdPolicyEval(ctx context.Context, args []string, cfg config.Config, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `policy eval --specialist S.json --item I.json [flags]`)
	specFile := fs.String("specialist", "", "JSON file of the specialist: {type, id, securityLevel, authorizedGroups}")
	itemFile := fs.String("item", "", "JSON file of the memory item, as ingested")
	explain := fs.Bool("explain", false, "also print which of the policy's rules fired, and OPA's trace of the policy's own rules")
	path := fs.String("policy", cfg.PolicyDir, "policy directory or bundle (default: SCS_POLICY_DIR, else the bundled policy)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("policy eval takes no arguments besides flags, got %q", pos)}
	}
	if *specFile == "" || *itemFile == "" {
		return usageError{"policy eval needs --specialist S.json and --item I.json"}
	}
	var spec h4r.Specialist
	if err := decodeFile(*specFile, &spec); err != nil {
		return err
	}
	var item h4r.Item
	if err := decodeFile(*itemFile, &item); err != nil {
		return err
	}
	if err := item.Validate(*itemFile); err != nil {
		return err
	}
	e, err := loadEngine(ctx, *path, cfg)
	if err != nil {
		return err
	}
	d, x, err := e.Explain(ctx, spec, &item)
	if err != nil {
		if *explain {
			printExplanation(stdout, x)
		}
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return err
	}
	if *explain {
		printExplanation(stdout, x)
	}
	return nil
}

func printExplanation(w io.Writer, x policy.Explanation) {
	fmt.Fprintln(w, "\nrules that fired:")
	for _, f := range x.Fired {
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintln(w, "\ntrace (the policy's own rules):")
	x.PrettyTrace(w)
}

// decodeFile reads one JSON value strictly; errors name the file and field.
func decodeFile(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return jsonstrict.Decode(data, v, name)
}
