package server

import (
	"mime"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
)

// guardBrowser keeps web pages out when no keys are configured, where
// nothing else would. A page the user visits can send requests to the
// loopback server: a "simple" cross-site POST carries its Origin, and a
// page whose own name its attacker re-points at 127.0.0.1 (DNS rebinding)
// can read the answers, its name in the Host header. So without keys the
// server answers only requests addressed to a loopback name (unless
// WithAnyHost) and refuses any Origin that is not loopback. With keys a
// browser cannot send the bearer cross-site without CORS, which this
// server never grants, so neither is checked.
func (s *Server) guardBrowser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if s.keys != nil {
			return next(c)
		}
		r := c.Request()
		if !s.anyHost && !loopbackHost(r.Host) {
			return h4r.Errorf(h4r.EFORBIDDEN, "Host", "without API keys this server answers only requests addressed to localhost, 127.0.0.0/8 or [::1] (a web page could otherwise read it by DNS rebinding); configure API keys to serve other names")
		}
		if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
			return h4r.Errorf(h4r.EFORBIDDEN, "Origin", "without API keys this server refuses requests from web pages whose origin is not on loopback")
		}
		return next(c)
	}
}

// loopbackHost reports whether a Host header ("localhost:8080",
// "127.0.0.1", "[::1]:8080") names a loopback host.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return false // an IPv6 address must be bracketed
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// loopbackOrigin reports whether an Origin header, scheme://host[:port]
// and nothing else, names a loopback host; "null" (a sandboxed page, a
// file) does not.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || origin != u.Scheme+"://"+u.Host {
		return false
	}
	return loopbackHost(u.Host)
}

// requireJSON refuses a request with a body that does not say it is JSON:
// 415 naming Content-Type. A page can send text/plain (or a form) cross
// site without asking, but never application/json; and a body in another
// type is not what the client thinks it sent. Requests no route serves get
// their 404 or 405 instead.
func (s *Server) requireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if r.ContentLength == 0 || c.RouteInfo().Method == "" {
			return next(c) // no body (-1 is a body of unknown length), or no route
		}
		if ri := c.RouteInfo(); s.accessOf(ri.Method, ri.Path).form {
			return next(c) // the console's forms, which check their CSRF token
		}
		if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
			return err
		}
		return next(c)
	}
}

// jsonContentType checks a Content-Type header: application/json, with
// any parameters but a charset other than UTF-8 (JSON is UTF-8).
func jsonContentType(ct string) error {
	const field = "Content-Type"
	if strings.TrimSpace(ct) == "" {
		return h4r.Errorf(h4r.EMEDIATYPE, field, "a request with a body must send Content-Type: application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return h4r.Errorf(h4r.EMEDIATYPE, field, "the body must be JSON, sent as Content-Type: application/json, not %q", clip(ct))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return h4r.Errorf(h4r.EMEDIATYPE, field, "JSON is UTF-8: send Content-Type: application/json; charset=utf-8, not charset %q", clip(cs))
	}
	return nil
}

// clip shortens a client's value quoted in an error.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
