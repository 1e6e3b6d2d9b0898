package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/metrics"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the outputs of the README's and docs/'s examples from real answers")

// docsClock is the clock of the server the examples run against: the
// demo's items are dated, so recency, and with it every score, would
// otherwise change from one day to the next.
var docsClock = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// docPages are the pages whose examples run: the README and docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, pages...)
}

// docBlock is one fenced block of a page, with the marker comment that
// precedes it, if any.
type docBlock struct {
	page         string
	line         int // of the opening fence, 1-based
	lang, marker string
	body         string
	start, end   int // byte offsets of the body within the page
}

var (
	fence       = regexp.MustCompile("(?m)^```([a-z]*)[ \t]*\n")
	markerRe    = regexp.MustCompile(`<!-- (example|not run): ?([^>]*?) ?-->\s*$`)
	runnableSet = map[string]bool{"sh": true, "bash": true, "shell": true}
)

// blocksOf splits a page into its fenced blocks.
func blocksOf(page, text string) ([]docBlock, error) {
	var out []docBlock
	pos := 0
	for {
		loc := fence.FindStringSubmatchIndex(text[pos:])
		if loc == nil {
			return out, nil
		}
		open := pos + loc[0]
		lang := text[pos+loc[2] : pos+loc[3]]
		bodyStart := pos + loc[1]
		closeAt := strings.Index(text[bodyStart:], "\n```")
		if strings.HasPrefix(text[bodyStart:], "```") {
			closeAt = -1
		}
		if closeAt < 0 && !strings.HasPrefix(text[bodyStart:], "```") {
			return nil, fmt.Errorf("%s:%d: a fenced block is never closed", page, strings.Count(text[:open], "\n")+1)
		}
		bodyEnd := bodyStart + closeAt + 1
		if closeAt < 0 {
			bodyEnd = bodyStart
		}
		before := strings.TrimRight(text[:open], " \t\n")
		marker := ""
		if i := strings.LastIndex(before, "\n"); i >= 0 {
			if m := markerRe.FindString(before[i+1:]); m != "" {
				marker = m
			}
		} else if m := markerRe.FindString(before); m != "" {
			marker = m
		}
		out = append(out, docBlock{page: page, line: strings.Count(text[:open], "\n") + 1, lang: lang,
			marker: marker, body: text[bodyStart:bodyEnd], start: bodyStart, end: bodyEnd})
		pos = bodyEnd + len("```")
		if pos > len(text) {
			return out, nil
		}
	}
}

// docsServer is the demo as `h4r serve --demo` serves it, with the clock
// fixed: the same apiServer over app.Open and the bundled corpus.
func docsServer(t *testing.T) (base string, dataDir string) {
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
	if err := loadDemo(ctx, a, log); err != nil {
		t.Fatal(err)
	}
	api := apiServer(cfg, a, nil, false, log, metrics.New(), nil)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = api.HTTPServer()
	ts.Listener = api.Listener(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL, cfg.DataDir
}

// docsBridgeServer is `H4R_BRIDGE_ENABLED=true h4r serve --demo` with the
// clock fixed, built by h4r serve's own openService, whose servers run
// background jobs (the bridge's backfill is one).
func docsBridgeServer(t *testing.T) docsFixture {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	cfg.BridgeEnabled = true
	return docsFixture{base: serveService(t, cfg, nil, true, func(string) []app.Option {
		return []app.Option{app.WithClock(func() time.Time { return docsClock })}
	})}
}

// serveService serves what h4r serve opens (openService) on a loopback
// port until the test ends, and returns its URL.
func serveService(t *testing.T, cfg config.Config, keys *auth.Keys, withDemo bool, more ...appOptions) string {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	svc, err := openService(context.Background(), cfg, keys, false, withDemo, log, more...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(svc.handler)
	t.Cleanup(func() {
		ts.Close()
		svc.close(log)
	})
	return ts.URL
}

// docsFixture is a server the examples run against and what its h4r
// commands see: vars is their environment (nil: each h4r command gets a
// scratch store of its own), dir their working directory ("" for the
// test's own) and root, if set, the directory a path under /etc/h4r/
// of their arguments is read from.
type docsFixture struct {
	base string
	vars map[string]string
	dir  string
	root string
}

// docsKeysFixture is the demo server, and for h4r commands a scratch
// data directory and a keys file /etc/h4r/keys.json (under root) holding
// the operator key: what docs/tenants.md's deployment starts from.
func docsKeysFixture(t *testing.T, demoBase string) docsFixture {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc", "h4r"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "h4r", "keys.json"), []byte(docsOperatorKeys()), 0o600); err != nil {
		t.Fatal(err)
	}
	return docsFixture{base: demoBase, vars: map[string]string{"H4R_DATA_DIR": filepath.Join(root, "data"), "H4R_LOG_LEVEL": "error"}, root: root}
}

// docsOperatorKeys is a keys file listing docsOperatorKey as an operator
// key.
func docsOperatorKeys() string {
	sum := sha256.Sum256([]byte(docsOperatorKey))
	return fmt.Sprintf(`[{"sha256": %q, "principal": {"id": "docs_operator", "securityLevel": "internal"}, "routes": ["read", "ingest", "admin"], "operator": true}]`,
		hex.EncodeToString(sum[:]))
}

// docsConfigFixture is the demo server, and for h4r commands an empty
// environment and a settings file /etc/h4r/h4r.yaml (under root), so that
// h4r config prints what the file sets and nothing of this machine's.
func docsConfigFixture(t *testing.T, demoBase string) docsFixture {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc", "h4r"), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "h4r_addr: 127.0.0.1:9090\nh4r_request_timeout: 3s\n"
	if err := os.WriteFile(filepath.Join(root, "etc", "h4r", "h4r.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return docsFixture{base: demoBase, vars: map[string]string{}, root: root}
}

// docsOperatorKey is the key $OPERATOR_KEY stands for (every $NAME does,
// see docsEnv): the tenants fixture lists it as an operator key.
const docsOperatorKey = "docs-example-key"

// docsTenantsServer is a deployment with tenants, built as docs/tenants.md
// tells: a keys file holding an operator key, the tenants acme and globex
// made by h4r tenants create, and the router of h4r serve (openService)
// in front of them. Its h4r commands act on the same data directory,
// tenants file and keys file, from a directory holding the notes.jsonl
// the page ingests.
func docsTenantsServer(t *testing.T) docsFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	keys := docsOperatorKeys()
	notes := `{"id": "acme-note-1", "kind": "note", "text": "The checkout test is flaky when the payment stub answers late."}
{"id": "acme-note-2", "kind": "note", "text": "Retry the checkout flow only after the cart is saved."}
`
	for name, body := range map[string]string{"keys.json": keys, "notes.jsonl": notes} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"H4R_DATA_DIR": filepath.Join(dir, "data"), "H4R_API_KEYS_FILE": filepath.Join(dir, "keys.json"),
		"H4R_TENANTS_FILE": filepath.Join(dir, "tenants.json"), "H4R_LOG_LEVEL": "error",
		"H4R_REQUEST_TIMEOUT_MS": "30000", "H4R_GENERATOR_TIMEOUT_MS": "30000"}
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"create", "acme"}, {"create", "globex"}} {
		if err := cmdTenants(ctx, args, &out, &errb, env(vars)); err != nil {
			t.Fatalf("h4r tenants %v: %v %s", args, err, errb.String())
		}
	}
	cfg, err := app.LoadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	k, err := auth.Load(cfg.APIKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	return docsFixture{base: serveService(t, cfg, k, false), vars: vars, dir: dir}
}

// TestDocExamples runs every shell example of the README and docs/
// against the demo and checks the output each one shows: the JSON block
// after an example is the real answer cut to the fields its marker names
// (show=...). Every shell block is either an example or says why it is
// not run. -update-docs rewrites the shown outputs.
//
// The marker is <!-- example: NAME [server=S] [show=PATHS] -->. server=
// picks what the example runs against (the demo without it):
//
//   - server=tenants: h4r serve with the tenants acme and globex and an
//     operator key ($OPERATOR_KEY); the example's h4r commands act on
//     the same tenants file, keys file and store (docsTenantsServer).
//   - server=bridge: the demo with H4R_BRIDGE_ENABLED=true and background
//     jobs (docsBridgeServer).
//   - server=config: the demo, with h4r commands in an empty environment
//     and a settings file at /etc/h4r/h4r.yaml (docsConfigFixture).
//   - server=keys: the demo, with h4r commands over a scratch store and a
//     keys file at /etc/h4r/keys.json holding the operator key
//     (docsKeysFixture).
//
// In a fixture with such files, a word naming a path under /etc/h4r/ is
// that path under the fixture's scratch root.
func TestDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo server")
	}
	demoBase, _ := docsServer(t)
	fixtures := map[string]docsFixture{"": {base: demoBase}}
	// A fixture lives as long as the whole test: it is made, at its first
	// example, by this test rather than by the example's subtest.
	fixture := func(name string) docsFixture {
		t.Helper()
		if f, ok := fixtures[name]; ok {
			return f
		}
		var f docsFixture
		switch name {
		case "tenants":
			f = docsTenantsServer(t)
		case "bridge":
			f = docsBridgeServer(t)
		case "config":
			f = docsConfigFixture(t, demoBase)
		case "keys":
			f = docsKeysFixture(t, demoBase)
		default:
			t.Fatalf("server=%s: no such server (the servers are tenants, bridge, config and keys)", name)
		}
		fixtures[name] = f
		return f
	}
	for _, page := range docPages(t) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		blocks, err := blocksOf(page, text)
		if err != nil {
			t.Fatal(err)
		}
		type edit struct {
			start, end int
			with       string
		}
		var edits []edit
		name := strings.TrimPrefix(page, filepath.Join("..", "..")+string(filepath.Separator))
		for i, b := range blocks {
			if !runnableSet[b.lang] {
				continue
			}
			m := markerRe.FindStringSubmatch(b.marker)
			if m == nil {
				t.Errorf("%s:%d: a shell block without <!-- example: NAME --> or <!-- not run: why -->", name, b.line)
				continue
			}
			if m[1] == "not run" {
				if strings.TrimSpace(m[2]) == "" {
					t.Errorf("%s:%d: <!-- not run: --> must say why", name, b.line)
				}
				continue
			}
			opts := parseMarker(m[2])
			fx := fixture(opts["server"])
			t.Run(name+"/"+opts["name"], func(t *testing.T) {
				last, err := runExample(t, fx, b.body)
				if err != nil {
					t.Fatalf("%s:%d: %v", name, b.line, err)
				}
				show := opts["show"]
				if show == "" {
					return
				}
				if i+1 >= len(blocks) || blocks[i+1].lang != "json" {
					t.Fatalf("%s:%d: show= needs a json block right after the example", name, b.line)
				}
				want, err := project(last, strings.Split(show, ","))
				if err != nil {
					t.Fatalf("%s:%d: %v (the answer was %.300s)", name, b.line, err, last)
				}
				got := blocks[i+1].body
				if *updateDocs {
					edits = append(edits, edit{blocks[i+1].start, blocks[i+1].end, want})
					return
				}
				if strings.TrimSpace(got) != strings.TrimSpace(want) {
					t.Errorf("%s:%d: the shown output is not what the demo answers; run go test ./cmd/h4r -run TestDocExamples -update-docs\nshown:\n%s\nanswered:\n%s", name, blocks[i+1].line, got, want)
				}
			})
		}
		if *updateDocs && len(edits) > 0 {
			for j := len(edits) - 1; j >= 0; j-- {
				e := edits[j]
				text = text[:e.start] + e.with + text[e.end:]
			}
			if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// parseMarker reads "NAME key=value key=value".
func parseMarker(s string) map[string]string {
	out := map[string]string{}
	for i, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		} else if i == 0 {
			out["name"] = f
		}
	}
	return out
}

// runExample runs each command of a shell block and returns the last
// answer: the body of an HTTP answer, or what an h4r command printed if
// that is JSON. curl commands go to the fixture's server; h4r commands
// run in process, with the fixture's environment and any NAME=value
// words written before them, and $HOME a scratch directory; h4r serve serves, on a port of its own,
// until the example ends, and the example's later curl commands go to it.
func runExample(t *testing.T, fx docsFixture, body string) ([]byte, error) {
	t.Helper()
	var last []byte
	home := ""
	exported := map[string]string{}
	for _, cmd := range commandsOf(body) {
		args, err := shellWords(cmd)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", cmd, err)
		}
		for i := range args {
			args[i] = fx.etc(args[i])
		}
		assigned := map[string]string{}
		for k, v := range exported {
			assigned[k] = v
		}
		for len(args) > 0 && envAssignment.MatchString(args[0]) {
			k, v, _ := strings.Cut(args[0], "=")
			assigned[k] = v
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		switch {
		case args[0] == "export":
			for _, a := range args[1:] {
				k, v, ok := strings.Cut(a, "=")
				if !ok || !envAssignment.MatchString(a) {
					return nil, fmt.Errorf("%s: export takes NAME=value words", cmd)
				}
				exported[k] = v
			}
		case args[0] == "curl" && len(assigned) == len(exported):
			b, err := runCurl(fx.base, args[1:], last)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cmd, err)
			}
			last = b
		case args[0] == "h4r" || (len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/h4r"):
			if args[0] == "go" {
				args = args[2:]
			}
			args = expandHome(t, args, &home)
			if len(args) > 1 && args[1] == "serve" {
				addr, err := serveExample(t, fx, assigned, args[2:])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", cmd, err)
				}
				fx.base = "http://" + addr
				continue
			}
			out, err := runH4R(t, fx, assigned, args[1:])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cmd, err)
			}
			if out = bytes.TrimSpace(out); json.Valid(out) {
				last = out
			}
		default:
			return nil, fmt.Errorf("%q: only curl and h4r commands run as examples", cmd)
		}
	}
	return last, nil
}

// expandHome gives $HOME in an h4r command's arguments a scratch
// directory, the same for every command of the example.
func expandHome(t *testing.T, args []string, home *string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, "$HOME") {
			if *home == "" {
				*home = t.TempDir()
			}
			a = strings.ReplaceAll(a, "$HOME", *home)
		}
		out[i] = a
	}
	return out
}

// etc is the path a word naming a file under /etc/h4r/ (alone, or as the
// value of NAME=value) stands for in the fixture: the same path under its
// root. Without a root the word is left as written.
func (fx docsFixture) etc(word string) string {
	if fx.root == "" {
		return word
	}
	k, v, ok := strings.Cut(word, "=")
	if ok && envAssignment.MatchString(word) && strings.HasPrefix(v, "/etc/h4r/") {
		return k + "=" + filepath.Join(fx.root, v)
	}
	if strings.HasPrefix(word, "/etc/h4r/") {
		return filepath.Join(fx.root, word)
	}
	return word
}

// envAssignment is a NAME=value word before a command.
var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// commandsOf joins continued lines and drops comments and blank lines.
func commandsOf(body string) []string {
	var out []string
	var cur strings.Builder
	inQuote := false
	for _, line := range strings.Split(body, "\n") {
		if !inQuote && cur.Len() == 0 && (strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "") {
			continue
		}
		cur.WriteString(line)
		inQuote = inQuote != (strings.Count(line, "'")%2 == 1)
		if inQuote {
			cur.WriteString("\n")
			continue
		}
		if strings.HasSuffix(line, "\\") {
			s := cur.String()
			cur.Reset()
			cur.WriteString(strings.TrimSuffix(s, "\\"))
			continue
		}
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// shellWords splits a command as sh would for the quoting examples use:
// single quotes, double quotes (with $NAME left as written), spaces and
// comments.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '#' && !in:
			// A comment, as sh reads one: to the end of the line.
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// runCurl sends what `curl -s URL [-X M] [-H H]... [-d BODY]` would, to
// the fixture's server, and fails on any status but 2xx. A $NAME in the
// URL is the field name, in lower case, of the previous answer
// ($JOB_ID: the job_id an earlier command was answered).
func runCurl(base string, args []string, previous []byte) ([]byte, error) {
	method, url := "", ""
	var body []byte
	header := http.Header{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-s", "-sS", "-S":
		case "-X":
			i++
			method = args[i]
		case "-H":
			i++
			k, v, ok := strings.Cut(args[i], ":")
			if !ok {
				return nil, fmt.Errorf("header %q has no colon", args[i])
			}
			header.Add(strings.TrimSpace(k), os.Expand(strings.TrimSpace(v), docsEnv))
		case "-d", "--data":
			i++
			body = []byte(args[i])
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("curl option %s is not understood by the example runner", a)
			}
			url = a
		}
	}
	if url == "" {
		return nil, fmt.Errorf("no URL")
	}
	url = strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "localhost:8080")
	if strings.Contains(url, "$") {
		var fields map[string]any
		if err := json.Unmarshal(previous, &fields); err != nil {
			return nil, fmt.Errorf("%s names a field of the previous answer, which is not a JSON object: %w", url, err)
		}
		var missing []string
		url = os.Expand(url, func(name string) string {
			v, ok := fields[strings.ToLower(name)].(string)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if missing != nil {
			return nil, fmt.Errorf("the previous answer has no string %s for the URL", strings.ToLower(strings.Join(missing, ", ")))
		}
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, base+url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s answered %d: %s", method, url, resp.StatusCode, b)
	}
	return b, nil
}

// docsEnv is what the examples' $NAMEs stand for: the demo runs without
// keys, so any key is ignored.
func docsEnv(name string) string { return "docs-example-key" }

// runH4R runs an h4r command in process and returns what it printed:
// over a demo store of its own, or with the fixture's environment (and
// from its directory) if it has one; assigned adds to either.
func runH4R(t *testing.T, fx docsFixture, assigned map[string]string, args []string) ([]byte, error) {
	t.Helper()
	vars := map[string]string{}
	if fx.vars == nil {
		vars["H4R_DATA_DIR"] = t.TempDir()
	}
	for k, v := range fx.vars {
		vars[k] = v
	}
	for k, v := range assigned {
		vars[k] = v
	}
	if fx.dir != "" {
		t.Chdir(fx.dir)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr, env(vars)); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// serveExample runs h4r serve in process, as runH4R runs other commands
// but on a port of its own (H4R_ADDR=127.0.0.1:0), and returns its
// address once it accepts connections; the server stops when the example
// ends. The example's later curl commands go to it.
func serveExample(t *testing.T, fx docsFixture, assigned map[string]string, args []string) (string, error) {
	t.Helper()
	vars := map[string]string{"H4R_DATA_DIR": t.TempDir()}
	for k, v := range fx.vars {
		vars[k] = v
	}
	for k, v := range assigned {
		vars[k] = v
	}
	vars["H4R_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer // written by the server until done
	go func() { done <- cmdServe(ctx, args, &stderr, env(vars), ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("h4r serve %v stopped with %v", args, err)
			}
		})
		return addr, nil
	case err := <-done:
		cancel()
		return "", fmt.Errorf("it stopped before serving: %w\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		cancel()
		<-done
		return "", fmt.Errorf("it did not serve within two minutes")
	}
}

// pathStep is one step of a show= path: a key, an index, or every element.
var pathStep = regexp.MustCompile(`([^.\[\]]+)|\[(\d+|\*)\]`)

// project cuts a JSON answer down to the given paths, keeping their
// nesting, and prints it indented.
func project(answer []byte, paths []string) (string, error) {
	var doc any
	if err := json.Unmarshal(answer, &doc); err != nil {
		return "", fmt.Errorf("the answer is not JSON: %w", err)
	}
	var out any
	for _, p := range paths {
		steps := pathStep.FindAllStringSubmatch(p, -1)
		var err error
		if out, err = take(doc, out, steps, p); err != nil {
			return "", err
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

// take copies the value at steps of src into dst, creating the
// containers on the way.
func take(src, dst any, steps [][]string, path string) (any, error) {
	if len(steps) == 0 {
		return src, nil
	}
	s := steps[0]
	if key := s[1]; key != "" {
		m, ok := src.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not under an object", path, key)
		}
		v, ok := m[key]
		if !ok {
			return nil, fmt.Errorf("%s: the answer has no %q", path, key)
		}
		d, _ := dst.(map[string]any)
		if d == nil {
			d = map[string]any{}
		}
		sub, err := take(v, d[key], steps[1:], path)
		if err != nil {
			return nil, err
		}
		d[key] = sub
		return d, nil
	}
	list, ok := src.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: [%s] is not under a list", path, s[2])
	}
	d, _ := dst.([]any)
	if s[2] == "*" {
		for len(d) < len(list) {
			d = append(d, nil)
		}
		for i := range list {
			sub, err := take(list[i], d[i], steps[1:], path)
			if err != nil {
				return nil, err
			}
			d[i] = sub
		}
		return d, nil
	}
	// [n] shows that one element; paths through the same [n] fill it
	// together.
	n, _ := strconv.Atoi(s[2])
	if n >= len(list) {
		return nil, fmt.Errorf("%s: the list has %d elements", path, len(list))
	}
	if len(d) == 0 {
		d = []any{nil}
	}
	sub, err := take(list[n], d[0], steps[1:], path)
	if err != nil {
		return nil, err
	}
	d[0] = sub
	return d, nil
}
