package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/memory"
	"github.com/h4r/h4r/trace"
)

// Words only items restricted to the security group hold: a page of the
// healer's key must never hold one, by id or by text.
const (
	vaultMemory = "VAULTCANARY"
	vaultTrace  = "VAULTTRACE"
	slowJob     = "console-test"
)

// seedBrowsers stores what the browsers show: two memories tagged
// ui-test (one for the security group only), 25 tagged bulk, two commit
// traces (one for the security group only) and one pack per key.
func seedBrowsers(t *testing.T, env *consoleEnv) {
	t.Helper()
	ctx := context.Background()
	write := func(req memory.WriteRequest) {
		t.Helper()
		if _, err := env.app.Memory.Write(ctx, h4r.Specialist{}, req); err != nil {
			t.Fatal(err)
		}
	}
	write(memory.WriteRequest{Scope: memory.Scope{SessionID: "s-ui", AgentID: "healer"}, Type: "convention",
		Payload: map[string]any{"note": "Prefer data-testid selectors on the login page"}, Tags: []string{"ui-test"}})
	write(memory.WriteRequest{Scope: memory.Scope{SessionID: "s-ui", AgentID: "lead"}, Type: "incident",
		Payload: map[string]any{"note": vaultMemory + " rotate the admin token"}, Tags: []string{"ui-test"}, RestrictedToGroups: []string{"security"}})
	for i := range 25 {
		write(memory.WriteRequest{Scope: memory.Scope{SessionID: "s-bulk", AgentID: "healer"}, Type: "note",
			Payload: map[string]any{"n": i}, Tags: []string{"bulk"}})
	}
	for _, tc := range []struct {
		sha, summary string
		groups       []string
	}{
		{"a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", "Stabilise the login selectors", nil},
		{"f1e2d3c4b5a60718293a4b5c6d7e8f9012345678", vaultTrace + " close the debug bypass", []string{"security"}},
	} {
		_, err := env.traces.Service.Ingest(ctx, &trace.CommitTrace{
			SHA: tc.sha, Repo: "acme/web", Branch: "main", Author: "healer", Timestamp: docsClock, Mode: trace.ModeClassic,
			Summary: tc.summary, Status: trace.StatusLanded, RestrictedToGroups: tc.groups,
			Decisions: []trace.Decision{{Context: "Flaky login selector", Selected: 0, Reasoning: "stable across redesigns",
				Options:  []trace.Option{{Description: "data-testid attributes"}, {Description: "XPath"}},
				Category: trace.CategoryImplementation, Risk: trace.RiskLow}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{consoleHealerKey, consoleLeadKey} {
		req, _ := http.NewRequest("POST", env.base+"/query", strings.NewReader(`{"session_id": "s-ui", "agent_id": "console", "query": "`+readmeQuery+`", "k": 5}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST /query: %d %s", res.StatusCode, b)
		}
	}
}

// startSlowJob starts a job of the lead's key that sees one of six files
// every 600 ms.
func startSlowJob(t *testing.T, env *consoleEnv) string {
	t.Helper()
	env.jobs.Runner.Register(slowJob, func(ctx context.Context, _ json.RawMessage, report func(jobs.Progress)) (jobs.Progress, error) {
		p := jobs.Progress{FilesTotal: 6, Errors: []jobs.FileIssue{}}
		for i := 1; i <= 6; i++ {
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-time.After(600 * time.Millisecond):
			}
			p.FilesSeen, p.ChunksWritten = i, 2*i
			report(p)
		}
		return p, nil
	}, false)
	sum := sha256.Sum256([]byte(consoleLeadKey))
	j, err := env.jobs.Runner.Start(context.Background(), slowJob, hex.EncodeToString(sum[:6]), map[string]string{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// artifact saves the whole page as a PNG (quality 100 is PNG) under H4R_TEST_ARTIFACTS, when set,
// and under docs/images when -console-screenshots is (docs names it).
func artifact(t *testing.T, ctx context.Context, name, docs string) {
	t.Helper()
	dir := os.Getenv("H4R_TEST_ARTIFACTS")
	if dir == "" && docs == "" {
		return
	}
	if dir != "" {
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if docs != "" {
		screenshot(t, ctx, docs)
	}
}

// noVault fails when the page holds a word of an item restricted to the
// security group.
func noVault(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	html := eval[string](t, ctx, `document.documentElement.outerHTML`)
	for _, s := range []string{securityItem, "SEC-77", "debug-login-bypass", "DEBUG_AUTH", vaultMemory, vaultTrace, "f1e2d3c4b5a6"} {
		if strings.Contains(html, s) {
			t.Errorf("%s: the page of a key without the security group holds %q", page, s)
		}
	}
}

// navigating runs steps that load another page and waits until it has
// loaded: a mark set on the window before is gone.
func navigating(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	must(t, ctx, chromedp.Evaluate[chromedp.Void](`window.oldPage = true`))
	must(t, ctx, steps...)
	// Evaluations fail while the page is replaced: they are retried.
	deadline := time.Now().Add(20 * time.Second)
	for {
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.oldPage !== true && document.readyState === "complete"`))
		if err == nil && loaded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the next page did not load within 20 s (last error: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func total(t *testing.T, ctx context.Context) int {
	t.Helper()
	return eval[int](t, ctx, `+document.getElementById("count").dataset.total`)
}

// TestConsoleBrowsersInBrowser drives the console's browsers in Chromium:
// items and memories filtered and paginated, commit traces, stored packs
// with feedback given (and refused without its CSRF token), a job's
// progress followed live, the benchmark reports, and on each browser a
// key without the security group seeing no trace of what it hides, in
// the DOM or in a count.
func TestConsoleBrowsersInBrowser(t *testing.T) {
	path := chromium(t)
	env := consoleStack(t)
	seedBrowsers(t, env)
	base := env.base
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 1400))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	browser, cancel = context.WithTimeout(browser, 3*time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser); err != nil {
		t.Fatal(err)
	}

	t.Run("memories filtered by keyboard, for both keys", func(t *testing.T) {
		counts := map[string]int{}
		for _, key := range []string{consoleHealerKey, consoleLeadKey} {
			ctx := tab(t, browser)
			login(t, ctx, base, key)
			must(t, ctx, chromedp.Navigate(base+"/ui/items?kind=memory"), chromedp.WaitVisible(chromedp.ID("itemfilter")))
			checkA11y(t, ctx, "memories")
			navigating(t, ctx, chromedp.Focus(chromedp.ID("tag")), chromedp.KeyEvent("ui-test"), chromedp.KeyEvent("\r"))
			must(t, ctx, chromedp.WaitVisible(chromedp.ID("results")))
			if f := eval[string](t, ctx, `document.activeElement.id`); f != "results" {
				t.Errorf("after filtering the focus is on %q, want the results", f)
			}
			counts[key] = total(t, ctx)
			if n := eval[int](t, ctx, `document.querySelectorAll("#results article.item").length`); n != counts[key] {
				t.Errorf("%d memories shown, the count says %d", n, counts[key])
			}
			if !eval[bool](t, ctx, `[...document.querySelectorAll("#results article.item")].every(a => a.querySelector('[data-tag="ui-test"]'))`) {
				t.Error("a memory shown does not hold the tag filtered by")
			}
			if key == consoleHealerKey {
				noVault(t, ctx, "memories")
				artifact(t, ctx, "console-memories-healer.png", "")
			}
		}
		if counts[consoleHealerKey] != 1 || counts[consoleLeadKey] != 2 {
			t.Errorf("ui-test memories counted %d for the healer and %d for the lead, want 1 and 2", counts[consoleHealerKey], counts[consoleLeadKey])
		}
	})

	t.Run("items paginated, nothing restricted on any page", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleHealerKey)
		must(t, ctx, chromedp.Navigate(base+"/ui/items?tag=bulk"), chromedp.WaitVisible(chromedp.ID("results")))
		if n := total(t, ctx); n != 25 {
			t.Errorf("%d bulk memories counted, want 25", n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#results article.item").length`); n != 20 {
			t.Errorf("page 1 shows %d items, want 20", n)
		}
		// By keyboard: the focus is on the results; Tab reaches the next page's link.
		must(t, ctx, chromedp.KeyEvent("\t"))
		if f := eval[string](t, ctx, `document.activeElement.id`); f != "next" {
			t.Errorf("Tab from the results focuses %q, want the next page's link", f)
		}
		navigating(t, ctx, chromedp.KeyEvent("\r"))
		if n := eval[int](t, ctx, `document.querySelectorAll("#results article.item").length`); n != 5 {
			t.Errorf("page 2 shows %d items, want 5", n)
		}
		// Every page of every item.
		must(t, ctx, chromedp.Navigate(base+"/ui/items"), chromedp.WaitVisible(chromedp.ID("results")))
		all := total(t, ctx)
		seen := 0
		for page := 1; ; page++ {
			noVault(t, ctx, fmt.Sprintf("items page %d", page))
			checkA11y(t, ctx, "items")
			seen += eval[int](t, ctx, `document.querySelectorAll("#results article.item").length`)
			if !eval[bool](t, ctx, `!!document.getElementById("next")`) {
				break
			}
			if page > 20 {
				t.Fatal("more than 20 pages")
			}
			navigating(t, ctx, chromedp.Click(chromedp.ID("next")))
		}
		if seen != all {
			t.Errorf("the pages show %d items, the count says %d", seen, all)
		}
		lead := tab(t, browser)
		login(t, lead, base, consoleLeadKey)
		must(t, lead, chromedp.Navigate(base+"/ui/items"), chromedp.WaitVisible(chromedp.ID("results")))
		if n := total(t, lead); n <= all {
			t.Errorf("the lead counts %d items, the healer %d: the healer's count includes items it may not see", n, all)
		}
	})

	t.Run("commit traces with decisions and outcome", func(t *testing.T) {
		counts := map[string]int{}
		for _, key := range []string{consoleHealerKey, consoleLeadKey} {
			ctx := tab(t, browser)
			login(t, ctx, base, key)
			must(t, ctx, chromedp.Navigate(base+"/ui/traces"), chromedp.WaitVisible(chromedp.ID("tracefilter")))
			navigating(t, ctx, chromedp.SetValue(chromedp.ID("repo"), "acme/web"), chromedp.SetValue(chromedp.ID("status"), "landed"),
				chromedp.Focus(chromedp.ID("repo")), chromedp.KeyEvent("\r"))
			must(t, ctx, chromedp.WaitVisible(chromedp.ID("results")))
			if !eval[bool](t, ctx, `location.search.includes("status=landed")`) {
				t.Error("the filter was not sent")
			}
			checkA11y(t, ctx, "traces")
			counts[key] = total(t, ctx)
			if key != consoleHealerKey {
				continue
			}
			noVault(t, ctx, "traces")
			row := eval[string](t, ctx, `document.querySelector("#results article.trace").innerText`)
			for _, want := range []string{"Stabilise the login selectors", "data-testid attributes", "stable across redesigns", "Outcome: landed"} {
				if !strings.Contains(row, want) {
					t.Errorf("the trace shown lacks %q: %s", want, row)
				}
			}
			artifact(t, ctx, "console-traces-healer.png", "console-traces.png")
		}
		if counts[consoleHealerKey] != 1 || counts[consoleLeadKey] != 2 {
			t.Errorf("traces counted %d for the healer and %d for the lead, want 1 and 2", counts[consoleHealerKey], counts[consoleLeadKey])
		}
	})

	t.Run("stored packs: feedback given, and refused without its CSRF token", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleHealerKey)
		must(t, ctx, chromedp.Navigate(base+"/ui/packs"), chromedp.WaitVisible(chromedp.ID("results")))
		checkA11y(t, ctx, "packs")
		noVault(t, ctx, "packs")
		if n := total(t, ctx); n != 1 {
			t.Fatalf("the healer's key is shown %d packs, it was delivered 1 (the lead's is not its own)", n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#results article.pack ol.results li").length`); n == 0 {
			t.Error("the stored pack lists no items")
		}
		// Without its token: refused, nothing recorded.
		must(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("form.feedback input[name=csrf]").remove()`))
		navigating(t, ctx, chromedp.Click(chromedp.CSS("form.feedback button")))
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("error")))
		if msg := eval[string](t, ctx, `document.getElementById("error").textContent`); !strings.Contains(msg, "csrf") {
			t.Errorf("error %q does not name the CSRF token", msg)
		}
		must(t, ctx, chromedp.Navigate(base+"/ui/packs"), chromedp.WaitVisible(chromedp.ID("results")))
		if n := eval[int](t, ctx, `document.querySelectorAll("li.verdict").length`); n != 0 {
			t.Errorf("the refused form recorded %d verdicts", n)
		}
		// By keyboard: choose the verdict, write a note, Enter.
		navigating(t, ctx, chromedp.SetValue(chromedp.CSS("form.feedback select"), "useful"),
			chromedp.Focus(chromedp.CSS("form.feedback input[name=notes]")), chromedp.KeyEvent("kept the right selectors"), chromedp.KeyEvent("\r"))
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("given")))
		if v := eval[string](t, ctx, `(document.querySelector("li.verdict") || {dataset: {}}).dataset.verdict || ""`); v != "useful" {
			t.Errorf("the pack shows verdict %q, want useful", v)
		}
		if !eval[bool](t, ctx, `document.querySelector("li.verdict").textContent.includes("kept the right selectors")`) {
			t.Error("the verdict's note is not shown")
		}
		must(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`))
		artifact(t, ctx, "console-packs-healer.png", "console-packs.png")
	})

	t.Run("a job's progress, followed live", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleLeadKey)
		id := startSlowJob(t, env)
		must(t, ctx, chromedp.Navigate(base+"/ui/jobs"), chromedp.WaitVisible(chromedp.ID("results")))
		checkA11y(t, ctx, "jobs")
		navigating(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/ui/jobs/`+id+`"]`)))
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("job")))
		checkA11y(t, ctx, "job")
		// A mark on the window: it survives the script's updates and would
		// not survive a reload.
		must(t, ctx, chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
		first := eval[int](t, ctx, `+document.getElementById("live").dataset.done`)
		var seen []int
		deadline := time.Now().Add(20 * time.Second)
		for {
			done := eval[int](t, ctx, `+document.getElementById("live").dataset.done`)
			if len(seen) == 0 || seen[len(seen)-1] != done {
				seen = append(seen, done)
			}
			if eval[string](t, ctx, `document.getElementById("live").dataset.state`) == "succeeded" {
				// The update that says succeeded may have landed between
				// the two reads: read the count it brought.
				if done := eval[int](t, ctx, `+document.getElementById("live").dataset.done`); seen[len(seen)-1] != done {
					seen = append(seen, done)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job page still shows %v after 20 s", seen)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !eval[bool](t, ctx, `window.sameDocument === true`) {
			t.Error("the page was reloaded: the script should have updated it in place")
		}
		if len(seen) < 3 || seen[len(seen)-1] != 6 || first >= 6 {
			t.Errorf("the progress shown moved %v (from %d), want several steps up to 6", seen, first)
		}
		if v := eval[int](t, ctx, `+document.querySelector("#live progress").value`); v != 6 {
			t.Errorf("the progress bar ends at %d, want 6", v)
		}
		artifact(t, ctx, "console-job-lead.png", "")
		healer := tab(t, browser)
		login(t, healer, base, consoleHealerKey)
		must(t, healer, chromedp.Navigate(base+"/ui/jobs/"+id), chromedp.WaitVisible(chromedp.ID("error")))
		if n := eval[int](t, healer, `document.querySelectorAll("#job").length`); n != 0 {
			t.Error("a key without the ingest class is shown another key's job")
		}
		if strings.Contains(eval[string](t, healer, `document.documentElement.outerHTML`), `href="/ui/jobs"`) {
			t.Error("the menu offers jobs to a key without the ingest class")
		}
	})

	t.Run("benchmark reports", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleHealerKey)
		must(t, ctx, chromedp.Navigate(base+"/ui/bench"), chromedp.WaitVisible(chromedp.ID("bench-latency")))
		checkA11y(t, ctx, "benchmarks")
		for _, sec := range []string{"bench-quality", "bench-tune", "bench-latency"} {
			if n := eval[int](t, ctx, `document.querySelectorAll("#`+sec+` ul.reports a").length`); n == 0 {
				t.Errorf("%s lists no report", sec)
			}
		}
		navigating(t, ctx, chromedp.Click(chromedp.CSS(`#bench-latency a[href*="latency-sqlite.md"]`)))
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("report")))
		checkA11y(t, ctx, "latency report")
		must(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelector("#report img").complete`))
		if w := eval[int](t, ctx, `document.querySelector("#report img").naturalWidth`); w == 0 {
			t.Error("the report's chart did not render")
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#report table.report tr").length`); n < 5 {
			t.Errorf("the report's table has %d rows", n)
		}
		ct, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector("#report img").src).then(r => r.headers.get("content-type") + " | " + r.headers.get("content-security-policy"))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ct, "image/svg+xml | ") || !strings.Contains(ct, "sandbox") {
			t.Errorf("the chart is served as %q, want image/svg+xml under a sandboxing policy", ct)
		}
		artifact(t, ctx, "console-bench-latency.png", "")
	})
}
