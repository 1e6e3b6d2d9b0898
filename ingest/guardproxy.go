package ingest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// guardProxy is a forward proxy on loopback that a clone's HTTP goes
// through (go-git's ProxyOptions) when private addresses are refused.
// go-git dials with a client from a process-wide registry, which a
// per-clone guard cannot replace; through the proxy, every connection of
// the clone, a redirect's included, is dialled here, with control checking
// the address actually dialled after DNS, as the url sources' client does.
type guardProxy struct {
	ln  net.Listener
	srv *http.Server
	d   *net.Dialer
	tr  *http.Transport
}

// startGuardProxy listens on a loopback port; control vets each address
// dialled (refusePrivate; nil allows all, for tests of the proxy itself).
func startGuardProxy(control func(network, address string, c syscall.RawConn) error) (*guardProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the clone's address guard: %w", err)
	}
	d := &net.Dialer{Timeout: 10 * time.Second, Control: control}
	g := &guardProxy{ln: ln, d: d,
		tr: &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: fetchTimeout}}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// URL is the proxy's address, for go-git's ProxyOptions.
func (g *guardProxy) URL() string { return "http://" + g.ln.Addr().String() }

// Close stops the proxy (tunnels end with their clone's connections).
func (g *guardProxy) Close() {
	_ = g.srv.Close()
	g.tr.CloseIdleConnections()
}

func (g *guardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "only absolute http URLs and CONNECT are proxied", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	resp, err := g.tr.RoundTrip(out)
	if err != nil {
		refuse(w, err)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// tunnel serves CONNECT (https): the target is dialled, checked, then
// bytes are copied both ways.
func (g *guardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	dst, err := g.d.DialContext(r.Context(), "tcp", r.Host)
	if err != nil {
		refuse(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		dst.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		dst.Close()
		return
	}
	defer conn.Close()
	defer dst.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(dst, io.MultiReader(io.LimitReader(rw.Reader, int64(rw.Reader.Buffered())), conn))
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(conn, dst)
}

// refuse answers a failed dial with its reason in the status line, which
// is what Go's client (go-git's) reports of a refused CONNECT.
func refuse(w http.ResponseWriter, err error) {
	reason := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, reason, http.StatusForbidden)
		return
	}
	conn, _, herr := hj.Hijack()
	if herr != nil {
		return
	}
	defer conn.Close()
	body := reason + "\n"
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 403 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", reason, len(body), body)
}
