package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
)

// Connection-level limits of HTTPServer and Listener.
const (
	// DefaultMaxConnections is the default cap on connections served at
	// once. Each may hold a body of up to the body limit while it is read.
	DefaultMaxConnections = 512
	// DefaultReadTimeout bounds how long a request, its body included,
	// may take to arrive.
	DefaultReadTimeout = 30 * time.Second
	// MaxHeaderBytes bounds a request's headers (net/http allows 4 KiB of
	// slack above it); an API key and a request id need far less.
	MaxHeaderBytes    = 64 << 10
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 2 * time.Minute
	// writeMargin is the time left to write an answer once the body has
	// arrived and the pack is built.
	writeMargin = 10 * time.Second
	// maxRefusing bounds the connections over the cap being answered at
	// once; beyond it they are closed without an answer.
	maxRefusing = 64
	// refuseTimeout bounds answering a connection over the cap.
	refuseTimeout = time.Second
)

// HTTPServer returns the http.Server of the API: the handler under the
// connection-level limits (header size, read, write and idle timeouts).
// Serve it on Listener(ln), which adds the connection cap and the error
// shape for what net/http answers itself.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		// The whole request, body included, must arrive within
		// readTimeout; a body still arriving then is answered 408
		// (readBody).
		ReadTimeout: s.readTimeout,
		// The write deadline starts once the headers are read, so it
		// covers reading the body, building the pack and writing it.
		WriteTimeout: s.readTimeout + s.requestTimeout + writeMargin,
		IdleTimeout:  idleTimeout,
	}
}

// Listener wraps ln for HTTPServer. It serves at most the configured
// number of connections at once (WithMaxConnections), and at most
// WithMaxConnectionsPerAddr of them from one remote address, so that one
// client holding connections open cannot take them all: one over either
// cap is answered 503 unavailable in the error shape and closed. And it rewrites
// the answers net/http writes itself, before any handler runs and in
// plain text (a malformed request line, a bad percent-escape in the path,
// headers over MaxHeaderBytes, no Host), into the error shape.
func (s *Server) Listener(ln net.Listener) net.Listener {
	l := &listener{Listener: ln, max: int64(s.maxConns), s: s, refusing: make(chan struct{}, maxRefusing),
		addrs: newAddrConns(s.limits.maxConnsPerAddr)}
	l.refusal = rawAnswer(h4r.Errorf(h4r.EUNAVAILABLE, "", "the server is serving its limit of %d connections; retry after a pause", s.maxConns),
		"Retry-After: 1\r\n")
	l.addrRefusal = rawAnswer(h4r.Errorf(h4r.EUNAVAILABLE, "", "the server is serving its limit of %d connections from one address; retry after a pause", s.limits.maxConnsPerAddr),
		"Retry-After: 1\r\n")
	return l
}

type listener struct {
	net.Listener
	s        *Server
	max      int64 // 0: no cap
	open     atomic.Int64
	refusing chan struct{} // the connections over the cap being answered
	refusal  []byte
	// addrs counts the connections of each remote address, so that one
	// address holding connections open cannot fill the cap.
	addrs       *addrConns
	addrRefusal []byte
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); l.max > 0 && n > l.max {
			l.open.Add(-1)
			l.refuse(c, l.refusal)
			continue
		}
		host := remoteHost(c)
		if !l.addrs.take(host) {
			l.open.Add(-1)
			l.refuse(c, l.addrRefusal)
			continue
		}
		return &conn{Conn: c, l: l, host: host}, nil
	}
}

// refuse answers a connection over the cap and closes it, without holding
// up Accept.
func (l *listener) refuse(c net.Conn, answer []byte) {
	l.s.metrics.Rejected(h4r.EUNAVAILABLE)
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close() // a flood: no answer rather than unbounded goroutines
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseTimeout))
		if _, err := c.Write(answer); err != nil {
			return
		}
		// Closing with the request unread would reset the connection,
		// and the client could lose the answer with it: signal the end,
		// then read what the client sent until it closes or the deadline.
		if cw, ok := c.(closeWriter); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, MaxHeaderBytes))
	}()
}

type closeWriter interface{ CloseWrite() error }

// conn is a served connection: it leaves the count when closed, and its
// writes pass through rewrite.
type conn struct {
	net.Conn
	l      *listener
	host   string // the remote address, as addrs counts it
	closed sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.l.open.Add(-1)
		c.l.addrs.release(c.host)
	})
	return err
}

// CloseWrite keeps net/http's half-close before it closes a connection
// whose request it did not read to the end (so the client reads the answer
// rather than a reset).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error) {
	if b, ok := c.l.rewrite(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// plainHeaders follow the status line of every answer net/http writes
// itself when it cannot read a request (net/http's conn.serve), in one
// write. No answer of a handler has them in this order: net/http sorts a
// handler's headers (Connection before Content-Type) and adds Date.
const plainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// rewrite returns the error-shape answer to write instead of p when p is
// one of net/http's own plain-text answers.
func (l *listener) rewrite(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	statusLine, body, ok := bytes.Cut(p, []byte(plainHeaders))
	if !ok || bytes.Contains(statusLine, []byte("\r\n")) || len(statusLine) < len(proto)+3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[len(proto) : len(proto)+3]))
	if err != nil {
		return nil, false
	}
	herr := plainError(status, string(body))
	l.s.metrics.Rejected(herr.Code)
	l.s.log.Info("request refused before routing", "status", status, "answer", string(body), "error", herr.Message)
	return rawAnswer(herr, ""), true
}

// plainError is the error of one of net/http's plain-text answers: the
// status and the text net/http wrote as the body ("400 Bad Request:
// missing required Host header"). Each is a request net/http could not
// read, so each is invalid_argument, 400 by the one status table (431 and
// 505 included, as a body over its limit is).
func plainError(status int, text string) *h4r.Error {
	detail := strings.TrimPrefix(text, strconv.Itoa(status)+" "+http.StatusText(status))
	detail = strings.TrimPrefix(detail, ": ")
	switch {
	case status == http.StatusRequestHeaderFieldsTooLarge:
		return h4r.Errorf(h4r.EINVALID, "", "the request headers are larger than %d bytes", MaxHeaderBytes)
	case status == http.StatusNotImplemented:
		return h4r.Errorf(h4r.EINVALID, "", "malformed HTTP request: unsupported Transfer-Encoding")
	case detail != "":
		return h4r.Errorf(h4r.EINVALID, "", "malformed HTTP request: %s", detail)
	}
	return h4r.Errorf(h4r.EINVALID, "", "malformed HTTP request: the request line or a header could not be read (a bad percent-escape in the path, a header line without a colon, …)")
}

// rawAnswer is a whole HTTP/1.1 answer carrying herr in the error shape,
// with extra header lines (each ending in CRLF), closing the connection.
func rawAnswer(herr *h4r.Error, extra string) []byte {
	body, _ := json.Marshal(errorBody{herr}) // an *h4r.Error always marshals
	status := HTTPStatus(herr.Code)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), extra, body)
}
