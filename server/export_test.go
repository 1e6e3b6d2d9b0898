package server

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
)

// Routes returns every route the echo router serves as "METHOD /path", with
// echo's ":name" parameters written "{name}" as OpenAPI writes them, sorted.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.echo.Router().Routes() {
		if r.Path == "/ui" || strings.HasPrefix(r.Path, "/ui/") {
			// The console's HTML pages are for people, not programs: they
			// are no operations of the API's description, whose clients
			// would be generated from it. console_test.go checks them.
			continue
		}
		segs := strings.Split(r.Path, "/")
		for i, seg := range segs {
			if name, ok := strings.CutPrefix(seg, ":"); ok {
				segs[i] = "{" + name + "}"
			}
		}
		out = append(out, r.Method+" "+strings.Join(segs, "/"))
	}
	slices.Sort(out)
	return out
}

// AddPanicRoute registers GET path with a handler that calls f, which is
// expected to panic, so that tests can check the recovery middleware. Call
// it before serving: echo's router is not safe to change while it serves.
func (s *Server) AddPanicRoute(path string, f func()) {
	s.echo.GET(path, func(*echo.Context) error {
		f()
		return nil
	})
}

// RouteAccess reports how a route, written as Routes writes it ("GET
// /v1/items/{id}"), is guarded: public needs no key, limited counts
// against the key's rate limit.
func (s *Server) RouteAccess(route string) (public, limited bool) {
	method, path, _ := strings.Cut(route, " ")
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			segs[i] = ":" + strings.TrimSuffix(name, "}")
		}
	}
	a := s.accessOf(method, strings.Join(segs, "/"))
	return a.public, a.limited
}

// HoldSlots takes every pack slot of the server's engine, as a burst of
// slow packs would, until release is called.
func (s *Server) HoldSlots() (release func()) {
	return s.engine.(interface{ HoldSlots() func() }).HoldSlots()
}
