package bolttest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"testing"

	"github.com/h4r/h4r/store/neo4j/internal/cypher"
)

// client is a raw Bolt client: the driver hides the protocol's states, so
// these tests speak it by hand.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) handshake(proposals ...[4]byte) [4]byte {
	c.t.Helper()
	out := []byte(magic)
	for i := range 4 {
		var p [4]byte
		if i < len(proposals) {
			p = proposals[i]
		}
		out = append(out, p[:]...)
	}
	if _, err := c.c.Write(out); err != nil {
		c.t.Fatal(err)
	}
	var answer [4]byte
	if _, err := io.ReadFull(c.r, answer[:]); err != nil {
		c.t.Fatal(err)
	}
	return answer
}

func (c *client) send(tag byte, fields ...any) {
	c.t.Helper()
	body, err := Encode(nil, Struct{Tag: tag, Fields: fields})
	if err != nil {
		c.t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint16(nil, uint16(len(body)))
	msg = append(append(msg, body...), 0, 0)
	if _, err := c.c.Write(msg); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) receive() Struct {
	c.t.Helper()
	var msg []byte
	for {
		var size [2]byte
		if _, err := io.ReadFull(c.r, size[:]); err != nil {
			c.t.Fatal(err)
		}
		n := binary.BigEndian.Uint16(size[:])
		if n == 0 {
			break
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(c.r, chunk); err != nil {
			c.t.Fatal(err)
		}
		msg = append(msg, chunk...)
	}
	v, _, err := Decode(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	return v.(Struct)
}

func (c *client) expect(tag byte) Struct {
	c.t.Helper()
	m := c.receive()
	if m.Tag != tag {
		c.t.Fatalf("got message 0x%02x %v, want 0x%02x", m.Tag, m.Fields, tag)
	}
	return m
}

func TestHandshakeNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		proposals [][4]byte
		want      [4]byte
	}{
		{"the Go driver's proposals get 5.4", [][4]byte{{0, 0, 1, 0xff}, {0, 8, 8, 5}, {0, 2, 4, 4}, {0, 0, 0, 3}}, [4]byte{0, 0, 4, 5}},
		{"5.2 exactly", [][4]byte{{0, 0, 2, 5}}, [4]byte{0, 0, 2, 5}},
		{"a range ending above 5.4", [][4]byte{{0, 3, 6, 5}}, [4]byte{0, 0, 4, 5}},
		{"a range starting above 5.4", [][4]byte{{0, 1, 8, 5}}, [4]byte{}},
		{"5.0 has no LOGON", [][4]byte{{0, 0, 0, 5}}, [4]byte{}},
		{"only Bolt 4", [][4]byte{{0, 2, 4, 4}}, [4]byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, Start(t, NewGraph()))
			if got := c.handshake(tc.proposals...); got != tc.want {
				t.Errorf("answer % x, want % x", got, tc.want)
			}
		})
	}
}

// After a FAILURE the server ignores everything until RESET, as Neo4j
// does; the driver depends on it to recover a connection.
func TestFailureIgnoresUntilReset(t *testing.T) {
	c := dial(t, Start(t, NewGraph(), WithAuth("neo4j", "secret")))
	c.handshake([4]byte{0, 0, 4, 5})
	c.send(msgHello, map[string]any{"user_agent": "test"})
	c.expect(msgSuccess)
	c.send(msgLogon, map[string]any{"scheme": "basic", "principal": "neo4j", "credentials": "secret"})
	c.expect(msgSuccess)

	c.send(msgRun, "MATCH (n) DETACH DELETE n", map[string]any{}, map[string]any{})
	f := c.expect(msgFailure)
	if code := f.Fields[0].(map[string]any)["code"]; code != "Neo.ClientError.Statement.SyntaxError" {
		t.Errorf("failure code %v, want a syntax error for an unknown statement", code)
	}
	c.send(msgPull, map[string]any{"n": int64(-1)})
	c.expect(msgIgnored)
	c.send(msgRun, cypher.CountPresent, map[string]any{}, map[string]any{})
	c.expect(msgIgnored)
	c.send(msgReset)
	c.expect(msgSuccess)

	c.send(msgBegin, map[string]any{"mode": "r"})
	c.expect(msgSuccess)
	c.send(msgRun, cypher.CountPresent, map[string]any{}, map[string]any{})
	if fields := c.expect(msgSuccess).Fields[0].(map[string]any)["fields"]; !slices.Equal(fields.([]any), []any{"items"}) {
		t.Errorf("fields %v, want [items]", fields)
	}
	c.send(msgPull, map[string]any{"n": int64(1000)})
	if rec := c.expect(msgRecord); rec.Fields[0].([]any)[0] != int64(0) {
		t.Errorf("record %v, want [0]", rec.Fields)
	}
	c.expect(msgSuccess)
	c.send(msgCommit)
	c.expect(msgSuccess)
	c.send(msgGoodbye)
}

func TestLogonRejectsWrongCredentials(t *testing.T) {
	c := dial(t, Start(t, NewGraph(), WithAuth("neo4j", "secret")))
	c.handshake([4]byte{0, 0, 4, 5})
	c.send(msgHello, map[string]any{"user_agent": "test"})
	c.expect(msgSuccess)
	c.send(msgLogon, map[string]any{"scheme": "basic", "principal": "neo4j", "credentials": "wrong"})
	f := c.expect(msgFailure)
	if code := f.Fields[0].(map[string]any)["code"]; code != "Neo.ClientError.Security.Unauthorized" {
		t.Errorf("code %v, want Unauthorized", code)
	}
}

// Writes in a transaction are seen by it, and by others only after
// COMMIT; a ROLLBACK drops them.
func TestTransactionsIsolateWrites(t *testing.T) {
	g := NewGraph()
	s := Start(t, g)
	c := dial(t, s)
	c.handshake([4]byte{0, 0, 4, 5})
	c.send(msgHello, map[string]any{"user_agent": "test"})
	c.expect(msgSuccess)
	c.send(msgLogon, map[string]any{"scheme": "none"})
	c.expect(msgSuccess)
	merge := func(id string) {
		c.send(msgRun, cypher.MergeItems, map[string]any{"items": []any{map[string]any{"id": id, "kind": "event"}}}, map[string]any{})
		c.expect(msgSuccess)
		c.send(msgPull, map[string]any{"n": int64(-1)})
		c.expect(msgSuccess)
	}
	for _, tc := range []struct {
		end  byte
		id   string
		kept bool
	}{{msgRollback, "dropped", false}, {msgCommit, "kept", true}} {
		c.send(msgBegin, map[string]any{})
		c.expect(msgSuccess)
		merge(tc.id)
		if _, seen := g.Nodes()[tc.id]; seen {
			t.Errorf("%s is visible before the transaction ends", tc.id)
		}
		c.send(tc.end)
		c.expect(msgSuccess)
		if _, seen := g.Nodes()[tc.id]; seen != tc.kept {
			t.Errorf("%s visible=%v after 0x%02x, want %v", tc.id, seen, tc.end, tc.kept)
		}
	}
	c.send(msgBegin, map[string]any{"mode": "r"})
	c.expect(msgSuccess)
	c.send(msgRun, cypher.MergeItems, map[string]any{"items": []any{}}, map[string]any{})
	if code := c.expect(msgFailure).Fields[0].(map[string]any)["code"]; code != "Neo.ClientError.Statement.AccessMode" {
		t.Errorf("a write in a read transaction failed with %v", code)
	}
}
