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
	name string
	enc  *tiktoken.Tiktoken
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
	useOfflineLoader()
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("loading token encoding %s: %w", encoding, err)
	}
	return &Counter{name: encoding, enc: enc}, nil
}

// Encoding returns the encoding's name.
func (c *Counter) Encoding() string { return c.name }

// Count returns the exact number of tokens in text. Special-token markers
// such as "<|endoftext|>" in the text count as ordinary text, which is what
// they are when they arrive in a memory item.
func (c *Counter) Count(text string) int {
	return len(c.enc.EncodeOrdinary(text))
}
