package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
)

// maxPooledAnswer caps the buffers wholeJSON keeps: a rare large answer
// (an export, a long list) does not pin its buffer.
const maxPooledAnswer = 256 << 10

// wholeJSON is the server's JSON serializer: it encodes an answer into a
// pooled buffer and writes it with its Content-Length. Echo's default
// writes the same bytes without a length, so that net/http sends an answer
// larger than its buffer (a pack of 18 KB) in chunked encoding, with a
// write to the socket for the closing chunk; with the length, a client
// knows the size up front and a pack takes one write fewer. An answer
// that fails to encode writes nothing, so that the error handler can still
// send its error. The encoder builds the whole answer before it is copied
// into the buffer, so an answer is briefly held twice; answers are bounded
// by the request's budgets and list limits. Requests are decoded as echo's
// default does. A context pack, the answer sent most, is written by its
// own encoder (h4r.Pack.AppendJSON), to the same bytes.
type wholeJSON struct {
	echo.DefaultJSONSerializer
	buffers sync.Pool
}

func (w *wholeJSON) Serialize(c *echo.Context, target any, indent string) error {
	buf, _ := w.buffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= maxPooledAnswer {
			buf.Reset()
			w.buffers.Put(buf)
		}
	}()
	if p, ok := target.(*h4r.Pack); ok && indent == "" {
		b, err := p.AppendJSON(buf.AvailableBuffer())
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n')) // as json.Encoder ends a value
		return writeWhole(c.Response(), buf.Bytes())
	}
	enc := json.NewEncoder(buf)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(target); err != nil {
		return err
	}
	return writeWhole(c.Response(), buf.Bytes())
}

// writeWhole writes b as the whole answer, with its Content-Length, at the
// status already set (200 if none): how the server sends its JSON answers
// (wholeJSON, the A2A JSON-RPC replies, the OpenAPI document). It must
// come before any WriteHeader, which would send the headers without it.
func writeWhole(w http.ResponseWriter, b []byte) error {
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, err := w.Write(b)
	return err
}
