package tokens

import (
	"hash/maphash"
	"strings"
	"sync"
)

// Why a text may be counted in segments, cut before a space (U+0020)
// whose previous byte is printable ASCII (0x21–0x7E, never whitespace):
// tiktoken first splits the text with its encoding's regular expression
// and then encodes each piece on its own, so the count is the sum over
// the pieces. Of the alternatives of cl100k_base's and o200k_base's
// expressions, those that can hold a space are the whitespace ones
// (\s+(?!\S), \s*[\r\n]+, \s+), which start with whitespace and hold
// nothing else, and those with a leading optional character
// ([^\r\n\p{L}\p{N}]?\p{L}+ and its o200k forms, " ?[^\s\p{L}\p{N}]+"),
// where the space can only be first. So no piece holds the cut space
// unless it starts there: a piece ends right before it, and none of the
// alternatives that can end there looks past its end (the only lookahead,
// (?!\S), belongs to a whitespace piece, and the byte before the cut is
// not whitespace). Matching from a segment's start therefore finds the
// same pieces as matching the whole text. TestCountMatchesReference and
// FuzzCountMatchesReference compare the two on real and random text.
func cutsBefore(prev byte) bool { return prev > ' ' && prev < 0x7f }

// maxCachedSegment is the longest segment the cache keeps: words and
// short runs of punctuation recur, long segments rarely do.
const maxCachedSegment = 64

// segmentCache remembers segments' counts. It is sharded so that counting
// on every core does not contend on one lock, and bounded: a full shard is
// emptied and starts again (recurring segments come back at once).
type segmentCache struct {
	seed   maphash.Seed
	shards [segmentShards]struct {
		mu     sync.Mutex
		counts map[string]int32
	}
}

const (
	segmentShards   = 64
	segmentsByShard = 4096 // 64 × 4096 segments, a few MB at most
)

func newSegmentCache() *segmentCache { return &segmentCache{seed: maphash.MakeSeed()} }

func (c *segmentCache) shard(seg string) int {
	return int(maphash.String(c.seed, seg) % segmentShards)
}

func (c *segmentCache) get(seg string) (int, bool) {
	sh := &c.shards[c.shard(seg)]
	sh.mu.Lock()
	n, ok := sh.counts[seg]
	sh.mu.Unlock()
	return int(n), ok
}

func (c *segmentCache) put(seg string, n int) {
	sh := &c.shards[c.shard(seg)]
	sh.mu.Lock()
	if sh.counts == nil || len(sh.counts) >= segmentsByShard {
		sh.counts = make(map[string]int32, 256)
	}
	sh.counts[strings.Clone(seg)] = int32(n) // not a view that keeps the whole text
	sh.mu.Unlock()
}
