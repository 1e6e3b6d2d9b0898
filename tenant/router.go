package tenant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/server"
)

// Authenticator maps an API key to its principal (auth.Keys).
type Authenticator interface {
	Authenticate(key string) (*auth.Principal, bool)
}

// Of returns the tenant a key's principal belongs to.
func Of(p *auth.Principal) string {
	if p.Tenant == "" {
		return Default
	}
	return p.Tenant
}

// Scoped is the authenticator of one tenant's server: it knows only that
// tenant's keys and operator keys, so that a request the router sent to
// the wrong tenant would still be refused as an unknown key.
func Scoped(keys Authenticator, name string) Authenticator {
	return scoped{keys: keys, name: name}
}

type scoped struct {
	keys Authenticator
	name string
}

func (s scoped) Authenticate(key string) (*auth.Principal, bool) {
	p, ok := s.keys.Authenticate(key)
	if !ok || (!p.Operator && Of(p) != s.name) {
		return nil, false
	}
	return p, true
}

// Cookie remembers, for the web console, which tenant's server holds the
// browser's session. It is only a routing hint: a session id is known to
// the server that made it alone, so a forged cookie reaches a server that
// asks for a login.
const Cookie = "h4r_tenant"

// maxLoginForm bounds the console login form the router reads for its key,
// before anyone vouches for the sender: the form holds a token and a key,
// a few hundred bytes. A longer one goes to the default tenant.
const maxLoginForm = 4 << 10

// Router sends each request to the server of its tenant.
type Router struct {
	keys     Authenticator
	tenants  map[string]http.Handler
	limiter  *auth.Limiter
	perMin   map[string]int // requests per minute per tenant; absent: unlimited
	log      *slog.Logger
	now      func() time.Time
	webhooks map[string]bool // paths of signed routes, routed by ?tenant=
}

// RouterOption configures NewRouter.
type RouterOption func(*Router)

// WithRequestQuota limits the requests per minute of a tenant (0:
// unlimited), across all its keys; more are answered 429 with
// Retry-After.
func WithRequestQuota(name string, perMinute int) RouterOption {
	return func(r *Router) {
		if perMinute > 0 {
			r.perMin[name] = perMinute
		}
	}
}

// WithRouterLogger sets the logger of the operator audit records.
func WithRouterLogger(l *slog.Logger) RouterOption { return func(r *Router) { r.log = l } }

// WithRouterClock sets the clock of the request quotas.
func WithRouterClock(now func() time.Time) RouterOption { return func(r *Router) { r.now = now } }

// WithSignedRoute names a route that carries no API key but a signature
// under the tenant's own secret (the GitHub webhook): its tenant comes
// from the query parameter tenant, and the tenant's server checks the
// signature.
func WithSignedRoute(path string) RouterOption { return func(r *Router) { r.webhooks[path] = true } }

// NewRouter returns a router over the servers of the tenants (Default
// among them). Keys are required: without them every caller is whoever
// it claims to be, and so could claim any tenant. Every key must belong
// to a tenant listed.
func NewRouter(keys *auth.Keys, tenants map[string]http.Handler, opts ...RouterOption) (*Router, error) {
	if keys == nil {
		return nil, fmt.Errorf("tenants need API keys (H4R_API_KEYS_FILE): without them a caller could claim any tenant")
	}
	if tenants[Default] == nil {
		return nil, fmt.Errorf("the tenant router has no %s tenant", Default)
	}
	for _, p := range keys.Principals() {
		if _, ok := tenants[Of(p)]; !ok {
			return nil, fmt.Errorf("API key %s belongs to tenant %q, which the tenants file does not list", p.KeyID, p.Tenant)
		}
	}
	r := &Router{keys: keys, tenants: tenants, limiter: auth.NewLimiter(1), perMin: map[string]int{},
		log: slog.Default(), now: time.Now, webhooks: map[string]bool{}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// ServeHTTP resolves the request's tenant and hands it to its server.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	name, err := r.resolve(w, req)
	if err != nil {
		writeError(w, err)
		return
	}
	if n, ok := r.perMin[name]; ok {
		quota := &auth.Principal{KeyID: "tenant:" + name, RateLimitPerMinute: n}
		if ok, wait := r.limiter.Allow(quota, "requests", r.now()); !ok {
			secs := max(int(math.Ceil(wait.Seconds())), 1)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeError(w, h4r.Errorf(h4r.EEXHAUSTED, "", "this tenant's quota of %d requests per minute is used up; retry in %d s", n, secs))
			return
		}
	}
	r.tenants[name].ServeHTTP(w, req)
}

// resolve returns the tenant of a request: the key's own, or, for an
// operator key, the header's (logged). An unknown key goes to the default
// tenant, whose server refuses it.
func (r *Router) resolve(w http.ResponseWriter, req *http.Request) (string, error) {
	named := req.Header.Get(Header)
	if key, ok := bearer(req.Header.Get("Authorization")); ok {
		p, ok := r.keys.Authenticate(key)
		switch {
		case !ok:
			return Default, nil
		case !p.Operator && named != "":
			return "", h4r.Errorf(h4r.EINVALID, Header, "this key belongs to one tenant and cannot name one: %s is for operator keys", Header)
		case !p.Operator:
			return Of(p), nil
		case named == "":
			return Default, nil
		}
		if _, ok := r.tenants[named]; !ok {
			return "", h4r.Errorf(h4r.ENOTFOUND, Header, "no tenant %q", named)
		}
		r.log.InfoContext(req.Context(), "operator request for a tenant", "key_id", p.KeyID, "tenant", named,
			"method", req.Method, "path", req.URL.Path)
		return named, nil
	}
	if named != "" {
		return "", h4r.Errorf(h4r.EUNAUTH, Header, "%s needs an operator key: send Authorization: Bearer <key>", Header)
	}
	switch {
	case r.webhooks[req.URL.Path]:
		name := req.URL.Query().Get("tenant")
		if name == "" {
			return Default, nil
		}
		if _, ok := r.tenants[name]; !ok {
			// The default tenant's server refuses the signature as it
			// refuses any other: whether a tenant exists is not told to
			// callers without a key.
			return Default, nil
		}
		return name, nil
	case req.URL.Path == "/ui/login" && req.Method == http.MethodPost:
		return r.loginTenant(w, req), nil
	case strings.HasPrefix(req.URL.Path, "/ui"):
		if ck, err := req.Cookie(Cookie); err == nil {
			if _, ok := r.tenants[ck.Value]; ok {
				return ck.Value, nil
			}
		}
	}
	return Default, nil
}

// loginTenant reads the key a console login form carries, and sends the
// form to that key's tenant, remembering it in Cookie. The body is put
// back for the tenant's server, which checks the form as it always does.
func (r *Router) loginTenant(w http.ResponseWriter, req *http.Request) string {
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || req.Body == nil {
		return Default
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxLoginForm+1))
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
	if err != nil || len(body) > maxLoginForm {
		return Default
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return Default
	}
	p, ok := r.keys.Authenticate(strings.TrimSpace(form.Get("key")))
	if !ok {
		return Default
	}
	name := Of(p)
	http.SetCookie(w, &http.Cookie{Name: Cookie, Value: name, Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: req.TLS != nil})
	return name
}

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(header string) (string, bool) {
	scheme, key, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != ""
}

// writeError answers in the service's one error shape.
func writeError(w http.ResponseWriter, err error) {
	herr, ok := err.(*h4r.Error)
	if !ok {
		herr = h4r.Errorf(h4r.EINTERNAL, "", "%v", err)
	}
	status := server.HTTPStatus(herr.Code)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="h4r"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *h4r.Error `json:"error"`
	}{herr})
}
