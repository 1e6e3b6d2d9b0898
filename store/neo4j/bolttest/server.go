package bolttest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
)

// Bolt message tags (the protocol's, shared by every 5.x version).
const (
	msgHello     byte = 0x01
	msgGoodbye   byte = 0x02
	msgReset     byte = 0x0f
	msgRun       byte = 0x10
	msgBegin     byte = 0x11
	msgCommit    byte = 0x12
	msgRollback  byte = 0x13
	msgDiscard   byte = 0x2f
	msgPull      byte = 0x3f
	msgTelemetry byte = 0x54
	msgRoute     byte = 0x66
	msgLogon     byte = 0x6a
	msgLogoff    byte = 0x6b
	msgSuccess   byte = 0x70
	msgRecord    byte = 0x71
	msgIgnored   byte = 0x7e
	msgFailure   byte = 0x7f
)

// The Bolt versions the server speaks: 5.1 (the first with LOGON) to 5.4.
// Later minors change the failure format (GQL errors), which the server
// does not produce.
const (
	minMinor = 1
	maxMinor = 4
)

// magic opens every Bolt connection.
const magic = "\x60\x60\xb0\x17"

// Failure is a Neo4j error the server reports with a FAILURE message; the
// driver turns it into a *neo4j.Neo4jError with this code.
type Failure struct {
	Code    string
	Message string
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Result is what a statement returned.
type Result struct {
	Keys []string
	Rows [][]any
}

// Tx is one transaction of a Handler: explicit (BEGIN … COMMIT) or the
// implicit one of an auto-commit RUN.
type Tx interface {
	Run(ctx context.Context, query string, params map[string]any) (Result, error)
	Commit() error
	Rollback()
}

// Handler answers statements. Begin is called for each transaction with
// the access mode the driver asked for ("r" or "w") and the database name
// ("" for the default).
type Handler interface {
	Begin(ctx context.Context, mode, database string) (Tx, error)
}

// Server is a Bolt 5 server on a loopback TCP port: enough of the protocol
// for the Neo4j Go driver to connect, authenticate, route, run statements
// in transactions and recover from failures. It answers with a Handler.
type Server struct {
	h        Handler
	ln       net.Listener
	user     string
	password string
	database string
	log      *slog.Logger

	ctx    context.Context // cancelled by Close: unblocks handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	nextID int
}

// Option configures a Server.
type Option func(*Server)

// WithAuth makes the server accept only these basic-auth credentials
// (default: any credentials, and none).
func WithAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// WithDatabase names the server's one database (default "neo4j"); a
// transaction for another database fails as it would on Neo4j.
func WithDatabase(name string) Option { return func(s *Server) { s.database = name } }

// WithLogger logs each connection's messages at debug level.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// Start listens on a loopback port and serves until tb ends.
func Start(tb testing.TB, h Handler, opts ...Option) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("bolttest: listening: %v", err)
	}
	s := &Server{h: h, ln: ln, database: "neo4j", conns: map[net.Conn]bool{},
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(s.Close)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is a direct connection URL, bolt://host:port.
func (s *Server) URL() string { return "bolt://" + s.Addr() }

// RoutingURL is a routing URL, neo4j://host:port: the driver first asks
// the server for a routing table, which names the server itself.
func (s *Server) RoutingURL() string { return "neo4j://" + s.Addr() }

// Close stops listening, closes every connection and waits for them.
func (s *Server) Close() {
	s.cancel()
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.nextID++
		id := s.nextID
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
			cn := &conn{s: s, c: c, r: bufio.NewReader(c), id: fmt.Sprintf("bolt-%d", id)}
			if err := cn.serve(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("bolttest: connection ended", "conn", cn.id, "error", err)
			}
		}()
	}
}

// conn is one client connection and its protocol state.
type conn struct {
	s     *Server
	c     net.Conn
	r     *bufio.Reader
	id    string
	minor int

	failed   bool // after a FAILURE everything but RESET is IGNORED
	tx       Tx
	auto     bool   // tx is the implicit transaction of a RUN
	mode     string // of tx: "r" or "w"
	pending  [][]any
	streamed bool // a result is open: PULL or DISCARD expected
	qid      int64
	commits  int
}

// Handshake: the magic, then four proposals of 4 bytes each:
// (reserved, range, minor, major); range counts the minors below minor
// that are accepted as well. The answer is (0, 0, minor, major), or zeros.
func (cn *conn) handshake() error {
	var hs [20]byte
	if _, err := io.ReadFull(cn.r, hs[:]); err != nil {
		return fmt.Errorf("reading the handshake: %w", err)
	}
	if string(hs[:4]) != magic {
		return fmt.Errorf("bad magic %x", hs[:4])
	}
	for i := 4; i < 20; i += 4 {
		rng, minor, major := int(hs[i+1]), int(hs[i+2]), int(hs[i+3])
		if major != 5 {
			continue // 0xFF is the manifest marker; older majors are not spoken
		}
		hi := min(minor, maxMinor)
		if hi >= minMinor && hi >= minor-rng {
			cn.minor = hi
			_, err := cn.c.Write([]byte{0, 0, byte(hi), 5})
			return err
		}
	}
	_, _ = cn.c.Write([]byte{0, 0, 0, 0})
	return errors.New("no common Bolt version")
}

// maxMessage bounds one message, so that a client sending chunks without
// an end cannot make the server hold unbounded memory.
const maxMessage = 16 << 20

// readMessage reads one chunked message: chunks of a 2-byte size and
// data, ended by an empty chunk.
func (cn *conn) readMessage() (Struct, error) {
	var msg []byte
	var size [2]byte
	for {
		if _, err := io.ReadFull(cn.r, size[:]); err != nil {
			return Struct{}, err
		}
		n := int(binary.BigEndian.Uint16(size[:]))
		if n == 0 {
			if len(msg) == 0 {
				continue // a no-op chunk (keep-alive)
			}
			break
		}
		if len(msg)+n > maxMessage {
			return Struct{}, fmt.Errorf("a message longer than %d bytes", maxMessage)
		}
		start := len(msg)
		msg = append(msg, make([]byte, n)...)
		if _, err := io.ReadFull(cn.r, msg[start:]); err != nil {
			return Struct{}, err
		}
	}
	v, rest, err := Decode(msg)
	if err != nil {
		return Struct{}, err
	}
	st, ok := v.(Struct)
	if !ok || len(rest) != 0 {
		return Struct{}, fmt.Errorf("a message must be one structure, got %T and %d more bytes", v, len(rest))
	}
	return st, nil
}

func (cn *conn) send(tag byte, fields ...any) error {
	body, err := Encode(nil, Struct{Tag: tag, Fields: fields})
	if err != nil {
		return err
	}
	_, err = cn.c.Write(frame(body))
	return err
}

// frame cuts a message into chunks of at most 64 KiB, each after its
// 2-byte size, and ends it with an empty chunk.
func frame(body []byte) []byte {
	var out []byte
	for len(body) > 0 {
		n := min(len(body), 0xffff)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
		out = append(out, body[:n]...)
		body = body[n:]
	}
	return append(out, 0, 0)
}

func (cn *conn) success(meta map[string]any) error {
	if meta == nil {
		meta = map[string]any{}
	}
	return cn.send(msgSuccess, meta)
}

// fail sends a FAILURE, ends any transaction and ignores what follows
// until RESET, as Neo4j does.
func (cn *conn) fail(err error) error {
	var f *Failure
	if !errors.As(err, &f) {
		f = &Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: err.Error()}
	}
	cn.endTx(false)
	cn.failed = true
	return cn.send(msgFailure, map[string]any{"code": f.Code, "message": f.Message})
}

func (cn *conn) endTx(commit bool) error {
	if cn.tx == nil {
		return nil
	}
	tx := cn.tx
	cn.tx, cn.auto, cn.pending, cn.streamed = nil, false, nil, false
	if commit {
		return tx.Commit()
	}
	tx.Rollback()
	return nil
}

func (cn *conn) serve() error {
	defer cn.endTx(false)
	if err := cn.handshake(); err != nil {
		return err
	}
	for {
		msg, err := cn.readMessage()
		if err != nil {
			return err
		}
		cn.s.log.Debug("bolttest: message", "conn", cn.id, "tag", fmt.Sprintf("0x%02x", msg.Tag), "fields", len(msg.Fields))
		if msg.Tag == msgGoodbye {
			return nil
		}
		if cn.failed && msg.Tag != msgReset {
			if err := cn.send(msgIgnored); err != nil {
				return err
			}
			continue
		}
		if err := cn.handle(msg); err != nil {
			return err
		}
	}
}

func field[T any](msg Struct, i int) (T, bool) {
	var zero T
	if i >= len(msg.Fields) {
		return zero, false
	}
	v, ok := msg.Fields[i].(T)
	return v, ok
}

func invalid(format string, args ...any) *Failure {
	return &Failure{Code: "Neo.ClientError.Request.Invalid", Message: fmt.Sprintf(format, args...)}
}

func (cn *conn) handle(msg Struct) error {
	switch msg.Tag {
	case msgHello:
		if _, ok := field[map[string]any](msg, 0); !ok {
			return cn.fail(invalid("HELLO needs a map"))
		}
		return cn.success(map[string]any{"server": "Neo4j/5.26.0", "connection_id": cn.id, "hints": map[string]any{}})
	case msgLogon:
		auth, ok := field[map[string]any](msg, 0)
		if !ok {
			return cn.fail(invalid("LOGON needs a map"))
		}
		if cn.s.user != "" || cn.s.password != "" {
			if auth["scheme"] != "basic" || auth["principal"] != cn.s.user || auth["credentials"] != cn.s.password {
				return cn.fail(&Failure{Code: "Neo.ClientError.Security.Unauthorized",
					Message: "The client is unauthorized due to authentication failure."})
			}
		}
		return cn.success(nil)
	case msgLogoff, msgTelemetry:
		return cn.success(nil)
	case msgReset:
		cn.endTx(false)
		cn.failed = false
		return cn.success(nil)
	case msgRoute:
		extra, _ := field[map[string]any](msg, 2)
		db := cn.s.database
		if name, ok := extra["db"].(string); ok && name != "" {
			if name != cn.s.database {
				return cn.fail(&Failure{Code: "Neo.ClientError.Database.DatabaseNotFound", Message: "database " + name + " does not exist"})
			}
		}
		addr := []any{cn.s.Addr()}
		return cn.success(map[string]any{"rt": map[string]any{
			"ttl": int64(300), "db": db,
			"servers": []any{
				map[string]any{"role": "ROUTE", "addresses": addr},
				map[string]any{"role": "READ", "addresses": addr},
				map[string]any{"role": "WRITE", "addresses": addr},
			},
		}})
	case msgBegin:
		if cn.tx != nil {
			return cn.fail(invalid("BEGIN inside a transaction"))
		}
		extra, _ := field[map[string]any](msg, 0)
		if err := cn.begin(extra, false); err != nil {
			return cn.fail(err)
		}
		return cn.success(nil)
	case msgRun:
		return cn.run(msg)
	case msgPull, msgDiscard:
		return cn.pull(msg)
	case msgCommit:
		if cn.tx == nil || cn.auto || cn.streamed {
			return cn.fail(invalid("COMMIT outside a transaction"))
		}
		if err := cn.endTx(true); err != nil {
			return cn.fail(err)
		}
		cn.commits++
		return cn.success(map[string]any{"bookmark": fmt.Sprintf("FB:%s:%d", cn.id, cn.commits)})
	case msgRollback:
		if cn.tx == nil || cn.auto {
			return cn.fail(invalid("ROLLBACK outside a transaction"))
		}
		cn.endTx(false)
		return cn.success(nil)
	}
	return cn.fail(invalid("message 0x%02x is not supported", msg.Tag))
}

func (cn *conn) begin(extra map[string]any, auto bool) error {
	db, _ := extra["db"].(string)
	if db != "" && db != cn.s.database {
		return &Failure{Code: "Neo.ClientError.Database.DatabaseNotFound", Message: "database " + db + " does not exist"}
	}
	mode, _ := extra["mode"].(string)
	if mode == "" {
		mode = "w" // Bolt's default access mode
	}
	tx, err := cn.s.h.Begin(cn.s.ctx, mode, db)
	if err != nil {
		return err
	}
	cn.tx, cn.auto, cn.mode, cn.qid = tx, auto, mode, -1
	return nil
}

func (cn *conn) run(msg Struct) error {
	query, ok := field[string](msg, 0)
	if !ok {
		return cn.fail(invalid("RUN needs a query string"))
	}
	params, _ := field[map[string]any](msg, 1)
	extra, _ := field[map[string]any](msg, 2)
	if cn.streamed {
		return cn.fail(invalid("RUN while a result is open"))
	}
	if cn.tx == nil {
		if err := cn.begin(extra, true); err != nil {
			return cn.fail(err)
		}
	}
	res, err := cn.tx.Run(cn.s.ctx, query, params)
	if err != nil {
		return cn.fail(err)
	}
	cn.pending, cn.streamed = res.Rows, true
	keys := make([]any, len(res.Keys))
	for i, k := range res.Keys {
		keys[i] = k
	}
	meta := map[string]any{"fields": keys, "t_first": int64(0)}
	if !cn.auto {
		cn.qid++
		meta["qid"] = cn.qid
	}
	return cn.success(meta)
}

func (cn *conn) pull(msg Struct) error {
	if !cn.streamed {
		return cn.fail(invalid("PULL or DISCARD without a result"))
	}
	extra, _ := field[map[string]any](msg, 0)
	n, _ := extra["n"].(int64)
	if n < 0 || n > int64(len(cn.pending)) {
		n = int64(len(cn.pending))
	}
	if msg.Tag == msgPull {
		for _, row := range cn.pending[:n] {
			if err := cn.send(msgRecord, row); err != nil {
				return err
			}
		}
	} else {
		n = int64(len(cn.pending))
	}
	cn.pending = cn.pending[n:]
	if len(cn.pending) > 0 {
		return cn.success(map[string]any{"has_more": true})
	}
	cn.streamed = false
	meta := map[string]any{"type": strings.Replace(cn.mode, "w", "rw", 1), "t_last": int64(0), "db": cn.s.database}
	if cn.auto {
		if err := cn.endTx(true); err != nil {
			return cn.fail(err)
		}
		cn.commits++
		meta["bookmark"] = fmt.Sprintf("FB:%s:%d", cn.id, cn.commits)
	}
	return cn.success(meta)
}
