package tokens

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Encodings this package supports.
const (
	CL100K = "cl100k_base" // GPT-4, GPT-3.5; the default
	O200K  = "o200k_base"  // GPT-4o and later
)

// useOfflineLoader installs the embedded BPE loader. tiktoken-go keeps its
// loader in a package variable, so this is done exactly once per process.
var useOfflineLoader = sync.OnceFunc(func() {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
})

// Counter counts tokens with one encoding. It is safe for concurrent use.
type Counter struct {
	name   string
	cl100k *bpeCounter // cl100k_base: counted without tiktoken-go

	// Other encodings: tiktoken-go, over segments whose counts are
	// remembered (segment.go).
	enc    *tiktoken.Tiktoken
	counts *segmentCache
}

// New loads the named encoding ("cl100k_base" or "o200k_base"). Loading
// parses the embedded BPE ranks (tens of milliseconds), so create one Counter
// per process and share it.
func New(encoding string) (*Counter, error) {
	switch encoding {
	case CL100K, O200K:
	default:
		return nil, fmt.Errorf("unknown token encoding %q (want %s or %s)", encoding, CL100K, O200K)
	}
	if encoding == CL100K {
		b, err := newCL100K()
		if err != nil {
			return nil, err
		}
		return &Counter{name: encoding, cl100k: b}, nil
	}
	useOfflineLoader()
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("loading token encoding %s: %w", encoding, err)
	}
	return &Counter{name: encoding, enc: enc, counts: newSegmentCache()}, nil
}

// Encoding returns the encoding's name.
func (c *Counter) Encoding() string { return c.name }

// Count returns the exact number of tokens in text. Special-token markers
// such as "<|endoftext|>" in the text count as ordinary text, which is what
// they are when they arrive in a memory item.
//
// cl100k_base is counted without tiktoken-go: its expression's pieces are
// cut by hand (pretoken.go), each piece's count is one rank lookup when it
// is a token, and the byte-pair merge of the others is remembered per
// piece (bpe.go). tiktoken-go's regular expression and its map lookups
// were most of an ingest's counting time.
//
// Other encodings: the text is cut into segments before every space that
// follows a printable ASCII character, and the segments' counts from
// tiktoken-go are summed; a segment's count is remembered (segment.go
// says why that is exact).
func (c *Counter) Count(text string) int {
	if c.cl100k != nil {
		return c.cl100k.count(text)
	}
	n, start := 0, 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && cutsBefore(text[i-1]) {
			n += c.countSegment(text[start:i])
			start = i
		}
	}
	return n + c.countSegment(text[start:])
}

// countSegment counts one segment, from the cache when it is there.
func (c *Counter) countSegment(seg string) int {
	if len(seg) > maxCachedSegment {
		return len(c.enc.EncodeOrdinary(seg))
	}
	if n, ok := c.counts.get(seg); ok {
		return n
	}
	n := len(c.enc.EncodeOrdinary(seg))
	c.counts.put(seg, n)
	return n
}
