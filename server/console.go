package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// The console is the web pages at /ui: a person sees what an agent gets
// for a query and why, and what policy hid. It is built from the same
// calls the API makes (identity, plan, pack) with the session's principal,
// so a key sees in the console exactly what it gets from the API.
//
// Security: the API key is posted once to the login form and kept on the
// server, in a session the browser names by an HttpOnly, SameSite=Strict
// cookie (Secure over TLS); the key is authenticated again on every
// request, so a revoked key ends its sessions. Every POST carries the
// session's CSRF token and is refused without it. Pages load no inline
// script (Content-Security-Policy). Without keys, the browser guard keeps
// the console on loopback as it keeps the API.

//go:embed console
var consoleFiles embed.FS

const (
	consoleCookie      = "h4r_console"
	consoleLoginCookie = "h4r_console_login"
	consoleSessionLife = 8 * time.Hour
	consoleMaxSessions = 10000
	consoleMaxForm     = 64 << 10
	// consoleCSP allows only the console's own stylesheet, script and
	// requests (the script's reload of a running job); the
	// SVG graph and the signal meters are markup, not script.
	consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// consoleRoute: the console's pages authenticate by their session cookie
// (consoleAuth), not by a bearer header, and take HTML forms.
var consoleRoute = routeAccess{public: true, form: true}

// consoleSession is one signed-in browser: the API key it logged in with
// and its CSRF token. Before login, and without keys, a form's token is
// not kept on the server (loginForm) and key is "".
type consoleSession struct {
	key     string
	csrf    string
	expires time.Time
}

// consoleState holds the parsed pages and the sessions.
type consoleState struct {
	secret   []byte // keys the login form's CSRF tokens (loginForm)
	pages    map[string]*template.Template
	mu       sync.Mutex
	sessions map[string]*consoleSession
}

func newConsoleState() (*consoleState, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"login", "pack", "dryrun", "error", "items", "traces", "packs", "jobs", "job", "bench"} {
		t, err := template.New("layout.html").Funcs(consoleFuncs).ParseFS(consoleFiles, "console/layout.html", "console/parts.html", "console/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the console page %s: %w", name, err)
		}
		pages[name] = t
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return &consoleState{secret: secret, pages: pages, sessions: map[string]*consoleSession{}}, nil
}

func (s *Server) consoleRoutes() []route {
	return []route{
		{"GET", "/ui", s.uiIndex, consoleRoute},
		{"GET", "/ui/login", s.uiLoginPage, consoleRoute},
		{"POST", "/ui/login", s.uiLogin, consoleRoute},
		{"POST", "/ui/logout", s.uiLogout, consoleRoute},
		{"GET", "/ui/pack", s.uiPack, consoleRoute},
		{"POST", "/ui/pack", s.uiPack, consoleRoute},
		{"GET", "/ui/dryrun", s.uiDryRun, consoleRoute},
		{"POST", "/ui/dryrun", s.uiDryRun, consoleRoute},
		{"GET", "/ui/static/:name", s.uiStatic, consoleRoute},
	}
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// session returns the browser's signed-in session, or nil.
func (s *Server) session(c *echo.Context) *consoleSession {
	ck, err := c.Cookie(consoleCookie)
	if err != nil {
		return nil
	}
	st := s.console
	st.mu.Lock()
	defer st.mu.Unlock()
	sess := st.sessions[ck.Value]
	if sess == nil || s.now().After(sess.expires) {
		delete(st.sessions, ck.Value)
		return nil
	}
	return sess
}

// newSession starts a session holding key, replacing the browser's current
// one (a new id at login, so that an id set before it is worth nothing).
func (s *Server) newSession(c *echo.Context, key string) *consoleSession {
	st := s.console
	now := s.now()
	sess := &consoleSession{key: key, csrf: randomToken(), expires: now.Add(consoleSessionLife)}
	id := randomToken()
	st.mu.Lock()
	if ck, err := c.Cookie(consoleCookie); err == nil {
		delete(st.sessions, ck.Value)
	}
	if len(st.sessions) >= consoleMaxSessions {
		for k, v := range st.sessions {
			if now.After(v.expires) {
				delete(st.sessions, k)
			}
		}
		for k := range st.sessions {
			if len(st.sessions) < consoleMaxSessions {
				break
			}
			delete(st.sessions, k) // full of live sessions: one gives way
		}
	}
	st.sessions[id] = sess
	st.mu.Unlock()
	c.SetCookie(&http.Cookie{
		Name: consoleCookie, Value: id, Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
		MaxAge: int(consoleSessionLife / time.Second),
	})
	return sess
}

// endSession forgets the browser's session and clears its cookie.
func (s *Server) endSession(c *echo.Context) {
	if ck, err := c.Cookie(consoleCookie); err == nil {
		s.console.mu.Lock()
		delete(s.console.sessions, ck.Value)
		s.console.mu.Unlock()
	}
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: "", Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil, MaxAge: -1})
}

// consoleHeaders are set on every console answer.
func consoleHeaders(c *echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the console's own forms, which checkWrite (and,
	// without keys, guardBrowser) must refuse.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// consoleAuth returns the session of a page request and sets the caller's
// principal as the API's authentication does. With keys, a browser without
// a session (or whose key no longer authenticates) is sent to the login
// page: ok is false and the answer is written. Without keys there is no
// session: the forms carry the token loginForm binds to a cookie.
func (s *Server) consoleAuth(c *echo.Context) (sess *consoleSession, ok bool, err error) {
	if s.keys == nil {
		// Nothing to keep: the form token alone, as before a login.
		form, _ := s.loginForm(c, true)
		return form, true, nil
	}
	sess = s.session(c)
	if sess == nil || sess.key == "" {
		consoleHeaders(c)
		return nil, false, c.Redirect(http.StatusSeeOther, "/ui/login")
	}
	p, found := s.keys.Authenticate(sess.key)
	if !found {
		s.endSession(c)
		consoleHeaders(c)
		return nil, false, c.Redirect(http.StatusSeeOther, "/ui/login")
	}
	c.Set(principalKey, p)
	return sess, true, nil
}

// checkWrite refuses a POST without the session's CSRF token, or sent by
// another site's page (an Origin other than this host's).
func (s *Server) checkWrite(c *echo.Context, sess *consoleSession) error {
	r := c.Request()
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return h4r.Errorf(h4r.EFORBIDDEN, "Origin", "the console accepts forms only from its own pages")
		}
	}
	got := r.PostForm.Get("csrf")
	if sess == nil || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		return h4r.Errorf(h4r.EFORBIDDEN, "csrf", "the form's CSRF token is missing or stale: reload the page and send it again")
	}
	return nil
}

// parseForm reads a POSTed form under the console's size limit.
func parseForm(c *echo.Context) error {
	r := c.Request()
	if r.Method != http.MethodPost {
		return nil
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, consoleMaxForm)
	if err := r.ParseForm(); err != nil {
		return h4r.Errorf(h4r.EINVALID, "", "the form could not be read (at most %d bytes, URL-encoded): %v", consoleMaxForm, err)
	}
	return nil
}

// render writes a console page.
func (s *Server) render(c *echo.Context, status int, page string, data map[string]any) error {
	consoleHeaders(c)
	if _, ok := data["Keys"]; !ok {
		data["Keys"] = s.keys != nil
	}
	var buf bytes.Buffer
	if err := s.console.pages[page].Execute(&buf, data); err != nil {
		return fmt.Errorf("rendering the console page %s: %w", page, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// renderError answers a console request with an error page in the status
// the API would answer the error with.
func (s *Server) renderError(c *echo.Context, sess *consoleSession, err error) error {
	herr := toError(err)
	if herr.Code == h4r.EINTERNAL {
		s.log.ErrorContext(c.Request().Context(), "console", "error", err)
		herr = h4r.Errorf(h4r.EINTERNAL, "", "internal error")
	}
	data := map[string]any{"Title": "Error", "Error": herr}
	if sess != nil {
		data["CSRF"] = sess.csrf
		data["SignedIn"] = s.keys == nil || sess.key != ""
	}
	return s.render(c, HTTPStatus(herr.Code), "error", data)
}

func (s *Server) uiIndex(c *echo.Context) error {
	consoleHeaders(c)
	return c.Redirect(http.StatusSeeOther, "/ui/pack")
}

// loginForm returns the CSRF token of the login form (and, without keys,
// of every form), bound to the browser's form cookie (set here when
// missing and set is true). Nothing is kept on the server: the token is
// an HMAC of the cookie under the server's secret, so that strangers
// cannot fill the session table.
func (s *Server) loginForm(c *echo.Context, set bool) (*consoleSession, bool) {
	nonce := ""
	if ck, err := c.Cookie(consoleLoginCookie); err == nil && ck.Value != "" {
		nonce = ck.Value
	} else if set {
		nonce = randomToken()
		c.SetCookie(&http.Cookie{Name: consoleLoginCookie, Value: nonce, Path: "/ui", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil})
	} else {
		return nil, false
	}
	mac := hmac.New(sha256.New, s.console.secret)
	mac.Write([]byte("login\x00" + nonce))
	return &consoleSession{csrf: base64.RawURLEncoding.EncodeToString(mac.Sum(nil))}, true
}

func (s *Server) uiLoginPage(c *echo.Context) error {
	if s.keys == nil {
		consoleHeaders(c)
		return c.Redirect(http.StatusSeeOther, "/ui/pack")
	}
	form, _ := s.loginForm(c, true)
	return s.render(c, http.StatusOK, "login", map[string]any{"Title": "Sign in", "CSRF": form.csrf})
}

func (s *Server) uiLogin(c *echo.Context) error {
	if s.keys == nil {
		consoleHeaders(c)
		return c.Redirect(http.StatusSeeOther, "/ui/pack")
	}
	form, _ := s.loginForm(c, false)
	if err := parseForm(c); err != nil {
		return s.renderError(c, nil, err)
	}
	if err := s.checkWrite(c, form); err != nil {
		return s.renderError(c, nil, err)
	}
	key := strings.TrimSpace(c.Request().PostForm.Get("key"))
	if _, ok := s.keys.Authenticate(key); !ok || key == "" {
		return s.render(c, http.StatusUnauthorized, "login", map[string]any{"Title": "Sign in", "CSRF": form.csrf,
			"Error": h4r.Errorf(h4r.EUNAUTH, "key", "unknown API key")})
	}
	c.SetCookie(&http.Cookie{Name: consoleLoginCookie, Value: "", Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil, MaxAge: -1})
	s.newSession(c, key)
	consoleHeaders(c)
	return c.Redirect(http.StatusSeeOther, "/ui/pack")
}

func (s *Server) uiLogout(c *echo.Context) error {
	sess := s.session(c)
	if err := parseForm(c); err != nil {
		return s.renderError(c, sess, err)
	}
	if err := s.checkWrite(c, sess); err != nil {
		return s.renderError(c, sess, err)
	}
	s.endSession(c)
	consoleHeaders(c)
	return c.Redirect(http.StatusSeeOther, "/ui/login")
}

// uiStatic serves the stylesheet and the script.
func (s *Server) uiStatic(c *echo.Context) error {
	name := c.Param("name")
	types := map[string]string{"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}
	ct, ok := types[name]
	if !ok {
		return h4r.Errorf(h4r.ENOTFOUND, "", "no such console file")
	}
	b, err := consoleFiles.ReadFile("console/" + name)
	if err != nil {
		return fmt.Errorf("reading the console file %s: %w", name, err)
	}
	consoleHeaders(c)
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, ct, b)
}

// specForm is a specialist as the console's form names it. A blank id or
// level, or no groups field, is left out of the claim (with a key: the
// key's); a blank groups field is no groups.
type specForm struct {
	ID, Level, Groups string
	NoGroups          bool // the form had no groups field: keep the key's
}

func readSpecForm(f url.Values, prefix string) specForm {
	_, hasGroups := f[prefix+"groups"]
	return specForm{ID: strings.TrimSpace(f.Get(prefix + "id")), Level: f.Get(prefix + "level"),
		Groups: strings.TrimSpace(f.Get(prefix + "groups")), NoGroups: !hasGroups}
}

// claim is the form as the JSON the API's body would carry.
func (f specForm) claim() json.RawMessage {
	m := map[string]any{}
	if f.ID != "" {
		m["id"] = f.ID
	}
	if f.Level != "" {
		m["securityLevel"] = f.Level
	}
	if f.NoGroups {
		if len(m) == 0 {
			return nil
		}
		b, _ := json.Marshal(m)
		return b
	}
	// The groups field left blank means none.
	groups := []string{}
	for g := range strings.SplitSeq(f.Groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	m["authorizedGroups"] = groups
	b, _ := json.Marshal(m)
	return b
}

// formOf shows a specialist in the form.
func formOf(spec h4r.Specialist) specForm {
	return specForm{ID: spec.ID, Level: spec.SecurityLevel.String(), Groups: strings.Join(spec.AuthorizedGroups, ",")}
}

// queryForm is the playground's request.
type queryForm struct {
	Text, Type, Limit, MaxTokens, MaxBytes string
	Weights                                map[string]string
}

func readQueryForm(f url.Values) queryForm {
	q := queryForm{Text: f.Get("text"), Type: f.Get("type"), Limit: f.Get("limit"),
		MaxTokens: f.Get("maxTokens"), MaxBytes: f.Get("maxBytes"), Weights: map[string]string{}}
	for sig := h4r.Signal(0); sig < h4r.NumSignals; sig++ {
		q.Weights[sig.String()] = strings.TrimSpace(f.Get("w_" + sig.String()))
	}
	return q
}

func defaultQueryForm() queryForm {
	return queryForm{Type: string(h4r.QueryHybrid), Limit: "10", MaxTokens: "2500", Weights: map[string]string{}}
}

// request is the form as the API's ContextRequest; errors name the form's
// fields.
func (q queryForm) request() (h4r.ContextRequest, error) {
	num := func(field, v string) (int, error) {
		if strings.TrimSpace(v) == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, h4r.Errorf(h4r.EINVALID, field, "must be a whole number of at least 0, not %q", clip(v))
		}
		return n, nil
	}
	yes := true
	req := h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryType(q.Type), Text: q.Text}, IncludeScores: &yes, IncludeGraph: &yes}
	var err error
	if req.Limit, err = num("limit", q.Limit); err != nil {
		return req, err
	}
	var b h4r.Budget
	if b.MaxTokens, err = num("maxTokens", q.MaxTokens); err != nil {
		return req, err
	}
	if b.MaxBytes, err = num("maxBytes", q.MaxBytes); err != nil {
		return req, err
	}
	if b != (h4r.Budget{}) {
		req.Budget = &b
	}
	for name, v := range q.Weights {
		if v == "" {
			continue
		}
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
			return req, h4r.Errorf(h4r.EINVALID, "w_"+name, "the weight of %s must be a number, not %q", name, clip(v))
		}
		if req.Weights == nil {
			req.Weights = map[string]float64{}
		}
		req.Weights[name] = w
	}
	return req, nil
}

// runForm builds the pack of a form's query for a claimed specialist, by
// the API's own steps: identity (narrowed to the key), plan, pack.
func (s *Server) runForm(c *echo.Context, q queryForm, field string, sf specForm) (*h4r.Pack, h4r.Specialist, error) {
	spec, err := s.identity(c, field, sf.claim())
	if err != nil {
		return nil, spec, err
	}
	req, err := q.request()
	if err != nil {
		return nil, spec, err
	}
	// The console lists what was left out and why, beside what was kept.
	req.Explain = h4r.ExplainAll
	plan, err := req.Plan("")
	if err != nil {
		return nil, spec, err
	}
	p, err := s.pack(c, spec, plan)
	return p, spec, err
}

// limit counts n packs against the key's read limit, as the API would.
func (s *Server) consoleLimit(c *echo.Context, n int) error {
	p := principal(c)
	if p == nil || s.limiter == nil {
		return nil
	}
	if ok, wait := s.limiter.AllowN(p, auth.RouteRead, s.now(), n); !ok {
		secs := max(int(math.Ceil(wait.Seconds())), 1)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return h4r.Errorf(h4r.EEXHAUSTED, "", "rate limit of this key for read routes reached; retry in %d s", secs)
	}
	return nil
}

// consolePage is the start of every page handler that builds packs: the
// session, the read class, the form and, for a POST, its CSRF token.
func (s *Server) consolePage(c *echo.Context) (*consoleSession, bool, error) {
	sess, ok, err := s.consoleAuth(c)
	if !ok || err != nil {
		return nil, false, err
	}
	if p := principal(c); p != nil && !p.Allows(auth.RouteRead) {
		return sess, false, s.renderError(c, sess, h4r.Errorf(h4r.EFORBIDDEN, "", "this key may not call read routes (its routes: %s)", joinRoutes(p.Routes)))
	}
	if err := parseForm(c); err != nil {
		return sess, false, s.renderError(c, sess, err)
	}
	if c.Request().Method == http.MethodPost {
		if err := s.checkWrite(c, sess); err != nil {
			return sess, false, s.renderError(c, sess, err)
		}
	}
	return sess, true, nil
}

// pageData is what every signed-in page shows.
func (s *Server) pageData(c *echo.Context, sess *consoleSession, title string) map[string]any {
	d := map[string]any{"Title": title, "CSRF": sess.csrf, "SignedIn": true, "MayAudit": s.mayAudit(c), "Levels": levelNames(),
		"MayRead": true, "MayIngest": true}
	if p := principal(c); p != nil {
		d["Principal"] = p.Specialist
		d["MayRead"], d["MayIngest"] = p.Allows(auth.RouteRead), p.Allows(auth.RouteIngest)
	}
	return d
}

func levelNames() []string {
	return []string{h4r.Public.String(), h4r.Internal.String(), h4r.Confidential.String(), h4r.Restricted.String()}
}

// uiPack is the playground: the form, and on POST the pack.
func (s *Server) uiPack(c *echo.Context) error {
	sess, ok, err := s.consolePage(c)
	if !ok || err != nil {
		return err
	}
	d := s.pageData(c, sess, "Pack playground")
	q, sf := defaultQueryForm(), specForm{ID: "playwright_healer", Level: "internal", Groups: "qa"}
	if p := principal(c); p != nil {
		sf = formOf(p.Specialist)
	}
	if c.Request().Method == http.MethodPost {
		f := c.Request().PostForm
		q, sf = readQueryForm(f), readSpecForm(f, "spec_")
		err := s.consoleLimit(c, 1)
		var p *h4r.Pack
		var spec h4r.Specialist
		if err == nil {
			p, spec, err = s.runForm(c, q, "specialist", sf)
		}
		if err != nil {
			d["Error"] = toError(err)
			d["Query"], d["Spec"] = q, sf
			return s.render(c, HTTPStatus(toError(err).Code), "pack", d)
		}
		d["Result"] = viewPack(p)
		d["Specialist"] = spec
	}
	d["Query"], d["Spec"] = q, sf
	return s.render(c, http.StatusOK, "pack", d)
}

// uiDryRun runs one query for two specialists and shows where their packs
// differ and why. It needs the audit class: the reasons of items policy
// hid are what it shows.
func (s *Server) uiDryRun(c *echo.Context) error {
	sess, ok, err := s.consolePage(c)
	if !ok || err != nil {
		return err
	}
	if !s.mayAudit(c) {
		return s.renderError(c, sess, h4r.Errorf(h4r.EFORBIDDEN, "", "the policy dry-run shows what policy hid, which needs a key with the audit or admin class"))
	}
	d := s.pageData(c, sess, "Policy dry-run")
	q := defaultQueryForm()
	a := specForm{ID: "playwright_healer", Level: "internal", Groups: "qa"}
	b := specForm{ID: "playwright_healer", Level: "public", Groups: ""}
	if p := principal(c); p != nil {
		a, b = formOf(p.Specialist), formOf(p.Specialist)
		b.Level = h4r.Public.String()
	}
	if c.Request().Method == http.MethodPost {
		f := c.Request().PostForm
		q, a, b = readQueryForm(f), readSpecForm(f, "a_"), readSpecForm(f, "b_")
		d["Query"], d["A"], d["B"] = q, a, b
		if err := s.consoleLimit(c, 2); err != nil {
			d["Error"] = toError(err)
			return s.render(c, HTTPStatus(toError(err).Code), "dryrun", d)
		}
		pa, sa, err := s.runForm(c, q, "a", a)
		var pb *h4r.Pack
		var sb h4r.Specialist
		if err == nil {
			pb, sb, err = s.runForm(c, q, "b", b)
		}
		if err != nil {
			d["Error"] = toError(err)
			return s.render(c, HTTPStatus(toError(err).Code), "dryrun", d)
		}
		d["Diff"] = diffPacks(pa, pb)
		d["SpecA"], d["SpecB"] = sa, sb
		d["PackA"], d["PackB"] = viewPack(pa), viewPack(pb)
	}
	d["Query"], d["A"], d["B"] = q, a, b
	return s.render(c, http.StatusOK, "dryrun", d)
}
