package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/trace"
)

var consoleScreenshots = flag.Bool("console-screenshots", false, "rewrite docs/images/console-*.png from the browser test of the console")

// The console test's keys: the README's healer, with the read class only,
// and a QA lead cleared for the security group, who may audit.
const (
	consoleHealerKey = "console-healer-key"
	consoleLeadKey   = "console-lead-key"
	readmeQuery      = "login test failures with selector issues"
	// securityItem is restricted to the security group: the healer's key
	// must never see its id or any of its words.
	securityItem = "sec-admin-login-bypass"
)

// consoleEnv is the demo as `h4r serve --demo` serves it behind the two
// keys above, with the docs' clock, its jobs and its commit traces.
type consoleEnv struct {
	base   string
	app    *app.App
	jobs   *app.Jobs
	traces *app.Traces
}

// consoleDemoServer is the demo's console, for the playground's tests.
func consoleDemoServer(t *testing.T) string {
	t.Helper()
	return consoleStack(t).base
}

func consoleStack(t *testing.T) *consoleEnv {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	log := slog.New(slog.DiscardHandler)
	a, err := app.Open(ctx, cfg, app.WithClock(func() time.Time { return docsClock }), app.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if _, err := demo.LoadIfEmpty(ctx, a.Store); err != nil {
		t.Fatal(err)
	}
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	keys, err := auth.Parse(fmt.Appendf(nil, `[
	  {"sha256": %q, "principal": {"id": "playwright_healer", "type": "specialist", "securityLevel": "internal", "authorizedGroups": ["qa"]}, "routes": ["read"]},
	  {"sha256": %q, "principal": {"id": "qa_lead", "type": "human", "securityLevel": "restricted", "authorizedGroups": ["qa", "security"]}, "routes": ["read", "audit", "ingest"]}
	]`, hash(consoleHealerKey), hash(consoleLeadKey)))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := app.OpenTraces(ctx, a, trace.NewMetrics(prometheus.NewRegistry()), log)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := app.OpenJobs(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(jb.Runner.Close)
	api := apiServer(cfg, a, keys, false, log, metrics.New(), nil, append(traceOptions(cfg, a, tr), server.WithJobs(jb))...)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = api.HTTPServer()
	ts.Listener = api.Listener(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	return &consoleEnv{base: ts.URL, app: a, jobs: jb, traces: tr}
}

// chromium returns the browser to drive. Without one the test is skipped,
// except in CI, where it must run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and no chromium binary is on PATH: install it (apt-get install -y chromium)")
	}
	t.Skip("no chromium binary on PATH (apt-get install -y chromium)")
	return ""
}

// tab is one browser tab in a browser context of its own (its own
// cookies), with the test's deadline.
func tab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action opens the tab, bound to the context it runs on:
	// this one, not a step's shorter one.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// must runs steps, each within 20 s; on failure it reports the page.
func must(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 600)`))
		t.Fatalf("%v; the page: %s", err, where)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// a11yProblems is a small axe-style check of the page: the language, one
// h1, a label for every form control, a name for every button, link,
// image, progress bar and meter, header cells in every table, and
// sections labelled by headings that exist.
const a11yProblems = `(() => {
  const out = [];
  if (!document.documentElement.lang) out.push("html has no lang");
  if (document.querySelectorAll("h1").length !== 1) out.push("not exactly one h1");
  for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
    if (!(el.labels && el.labels.length) && !el.getAttribute("aria-label")) out.push("control without a label: " + (el.id || el.name));
  }
  for (const el of document.querySelectorAll("button, a[href]")) {
    if (!el.textContent.trim() && !el.getAttribute("aria-label")) out.push("unnamed " + el.tagName);
  }
  for (const el of document.querySelectorAll("svg[role=img], img")) {
    if (!el.getAttribute("aria-label") && !el.getAttribute("alt")) out.push("image without a name");
  }
  for (const el of document.querySelectorAll("progress, meter")) {
    if (!el.getAttribute("aria-label") && !(el.labels && el.labels.length)) out.push(el.tagName.toLowerCase() + " without a name");
  }
  for (const el of document.querySelectorAll("table")) {
    if (!el.querySelector("th")) out.push("table without header cells");
  }
  for (const el of document.querySelectorAll("section[aria-labelledby]")) {
    if (!document.getElementById(el.getAttribute("aria-labelledby"))) out.push("section labelled by a missing id");
  }
  const ids = [...document.querySelectorAll("[id]")].map(e => e.id);
  if (new Set(ids).size !== ids.length) out.push("duplicate ids");
  return out;
})()`

func checkA11y(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if p := eval[[]string](t, ctx, a11yProblems); len(p) > 0 {
		t.Errorf("%s: accessibility: %v", page, p)
	}
}

// login signs in by keyboard only: the key field has the focus, Enter
// submits.
func login(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	must(t, ctx, chromedp.Navigate(base+"/ui/login"), chromedp.WaitVisible(chromedp.ID("key")))
	checkA11y(t, ctx, "login")
	if f := eval[string](t, ctx, `document.activeElement.id`); f != "key" {
		t.Errorf("the login page's focus is on %q, want the key field", f)
	}
	must(t, ctx, chromedp.KeyEvent(key), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("packform")))
}

// runQuery fills the playground's query and submits it with Enter.
func runQuery(t *testing.T, ctx context.Context, form string) {
	t.Helper()
	must(t, ctx, chromedp.SetValue(chromedp.ID("text"), readmeQuery), chromedp.Focus(chromedp.ID("text")), chromedp.KeyEvent("\r"))
}

// TestConsoleInBrowser drives the console in Chromium on the demo: the
// README's query in the playground, the dry-run, what a key without
// clearance may see, and a form sent without its CSRF token.
func TestConsoleInBrowser(t *testing.T) {
	path := chromium(t)
	base := consoleDemoServer(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 1600))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	browser, cancel = context.WithTimeout(browser, 2*time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser); err != nil { // starts the browser, bound to browser
		t.Fatal(err)
	}

	t.Run("playground for a key without clearance", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleHealerKey)
		runQuery(t, ctx, "packform")
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("kept")))
		checkA11y(t, ctx, "playground")
		if n := eval[int](t, ctx, `document.querySelectorAll("article.item").length`); n != 9 {
			t.Errorf("%d kept items, the README's pack keeps 9", n)
		}
		if !eval[bool](t, ctx, `[...document.querySelectorAll("article.item")].every(a => a.querySelectorAll("meter").length === 8)`) {
			t.Error("a kept item does not show its eight signals as bars")
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("article.item .tag.redacted").length`); n != 1 {
			t.Errorf("%d items marked redacted, the README's pack redacts 1", n)
		}
		reasons := eval[[]string](t, ctx, `[...document.querySelectorAll("#left tr[data-reason]")].map(r => r.dataset.reason)`)
		if len(reasons) != 43 {
			t.Errorf("%d left-out items shown, the README's pack leaves 43 out by the budget", len(reasons))
		}
		for _, r := range reasons {
			if !strings.HasPrefix(r, "budget") {
				t.Errorf("left-out reason %q shown to a key without the audit class", r)
			}
		}
		if !eval[bool](t, ctx, `document.getElementById("left").textContent.includes("5 more were left out by policy")`) {
			t.Error("the page does not say that policy left out 5 items")
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#tldr a.cite").length`); n == 0 {
			t.Error("the TL;DR has no citations")
		}
		if f := eval[string](t, ctx, `document.activeElement.id`); f != "summary" {
			t.Errorf("after the query the focus is on %q, want the result's summary (console.js, loaded under the CSP)", f)
		}
		// The restricted item, by id or by its words, is nowhere in the DOM.
		html := eval[string](t, ctx, `document.documentElement.outerHTML`)
		for _, s := range []string{securityItem, "SEC-77", "debug-login-bypass", "DEBUG_AUTH"} {
			if strings.Contains(html, s) {
				t.Errorf("the page of a key without the security group holds %q", s)
			}
		}
		if strings.Contains(html, `href="/ui/dryrun"`) {
			t.Error("the menu offers the dry-run to a key without the audit class")
		}
	})

	t.Run("a form without its CSRF token is refused", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleHealerKey)
		must(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#packform input[name=csrf]").remove()`))
		runQuery(t, ctx, "packform")
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("error")))
		msg := eval[string](t, ctx, `document.getElementById("error").textContent`)
		if !strings.Contains(msg, "csrf") {
			t.Errorf("error %q does not name the CSRF token", msg)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("article.item").length`); n != 0 {
			t.Errorf("the refused form built a pack of %d items", n)
		}
	})

	t.Run("playground for a key that may audit", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleLeadKey)
		runQuery(t, ctx, "packform")
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("kept")))
		if n := eval[int](t, ctx, `document.querySelectorAll("#left tr[data-reason=policy]").length`); n == 0 {
			t.Error("a key that may audit is shown no item left out by policy")
		}
		if eval[int](t, ctx, `document.querySelectorAll("#graph svg line").length`) == 0 {
			t.Error("no causal graph edges drawn")
		}
		screenshot(t, ctx, "console-playground.png")
	})

	t.Run("dry-run", func(t *testing.T) {
		ctx := tab(t, browser)
		login(t, ctx, base, consoleLeadKey)
		// By keyboard: the first Tab reaches the skip link, the next ones
		// the menu; Enter on the dry-run's link opens it.
		must(t, ctx, chromedp.KeyEvent("\t"))
		if f := eval[string](t, ctx, `document.activeElement.className`); f != "skip" {
			t.Errorf("the first Tab focuses %q, want the skip link", f)
		}
		must(t, ctx, chromedp.KeyEvent("\t\t"))
		if f := eval[string](t, ctx, `document.activeElement.getAttribute("href") || ""`); f != "/ui/dryrun" {
			t.Errorf("the third Tab focuses %q, want the dry-run's link", f)
		}
		must(t, ctx, chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("dryform")))
		checkA11y(t, ctx, "dry-run")
		must(t, ctx, chromedp.SetValue(chromedp.ID("b_level"), "internal"), chromedp.SetValue(chromedp.ID("b_groups"), "qa"))
		runQuery(t, ctx, "dryform")
		must(t, ctx, chromedp.WaitVisible(chromedp.ID("diff")))
		cause := eval[string](t, ctx, `(document.querySelector('#diff tr[data-id="`+securityItem+`"]') || {dataset: {}}).dataset.cause || ""`)
		if cause != "policy" {
			t.Errorf("the dry-run says %s differs by %q, want policy", securityItem, cause)
		}
		if f := eval[string](t, ctx, `document.activeElement.id`); f != "diff" {
			t.Errorf("after the dry-run the focus is on %q, want the differences", f)
		}
		screenshot(t, ctx, "console-dryrun.png")
	})
}

// screenshot writes the page to docs/images when -console-screenshots is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*consoleScreenshots {
		return
	}
	must(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "images", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
