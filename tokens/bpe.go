package tokens

import (
	"fmt"
	"math"
	"unicode/utf8"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// cl100kFile is the name under which tiktoken-go's loaders know
// cl100k_base's ranks; the offline loader reads the copy embedded in the
// binary.
const cl100kFile = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

// bpeCounter counts cl100k_base tokens without tiktoken-go: pieces from
// nextPiece, then tiktoken's byte-pair merge, counting the parts instead of
// building the tokens. Rank lookups index the map with substrings of the
// piece, so counting allocates nothing for pieces up to maxStackPiece
// bytes (and for those the cache of merged pieces already holds).
type bpeCounter struct {
	ranks *rankTable
	// merged remembers the counts of pieces that are not one token: the
	// merge costs a rank lookup per byte and per merge, and words recur.
	merged *segmentCache
}

func newCL100K() (*bpeCounter, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(cl100kFile)
	if err != nil {
		return nil, fmt.Errorf("loading the ranks of %s: %w", CL100K, err)
	}
	return &bpeCounter{ranks: newRankTable(ranks), merged: newSegmentCache()}, nil
}

// count returns the number of cl100k_base tokens of text. tiktoken-go
// matches its expression on the text's runes and encodes each piece as
// the runes' UTF-8, so an invalid byte counts as U+FFFD; text with one is
// first rewritten the same way.
func (b *bpeCounter) count(text string) int {
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	n := 0
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		n += b.pieceCount(text[i:j])
		i = j
	}
	return n
}

// pieceCount is the length of tiktoken's encoding of one piece.
func (b *bpeCounter) pieceCount(piece string) int {
	if len(piece) <= 1 {
		return len(piece) // every byte is a token
	}
	if _, ok := b.ranks.rank(piece); ok {
		return 1
	}
	if len(piece) > maxCachedSegment {
		return b.merge(piece)
	}
	if n, ok := b.merged.get(piece); ok {
		return n
	}
	n := b.merge(piece)
	b.merged.put(piece, n)
	return n
}

// maxStackPiece is the longest piece merged in arrays on the stack.
const maxStackPiece = 128

// merge is tiktoken's byte-pair merge of a piece (tiktoken-go's
// bytePairMerge): starting from single bytes, repeatedly merge the
// adjacent pair whose joined bytes have the lowest rank, the leftmost on a
// tie, until no pair is a token. It returns the number of parts left.
// bounds[k] is where part k starts (the last one is len(piece)); rank[k]
// is the rank of parts k and k+1 joined, or noRank.
func (b *bpeCounter) merge(piece string) int {
	const noRank = math.MaxInt32
	var boundsBuf, rankBuf [maxStackPiece + 1]int32
	bounds, rank := boundsBuf[:0], rankBuf[:0]
	if len(piece) > maxStackPiece {
		bounds, rank = make([]int32, 0, len(piece)+1), make([]int32, 0, len(piece)+1)
	}
	for k := range len(piece) + 1 {
		bounds = append(bounds, int32(k))
		rank = append(rank, noRank)
	}
	// getRank is the rank of the bytes from part k to the start of part
	// k+skip+2, if that part exists.
	getRank := func(k, skip int) int32 {
		if k+skip+2 < len(bounds) {
			if r, ok := b.ranks.rank(piece[bounds[k]:bounds[k+skip+2]]); ok {
				return r
			}
		}
		return noRank
	}
	for k := 0; k+2 < len(bounds); k++ {
		rank[k] = getRank(k, 0)
	}
	for len(bounds) > 1 {
		minRank, at := int32(noRank), -1
		for k := 0; k+1 < len(bounds); k++ {
			if rank[k] < minRank {
				minRank, at = rank[k], k
			}
		}
		if at < 0 {
			break
		}
		rank[at] = getRank(at, 1)
		if at > 0 {
			rank[at-1] = getRank(at-1, 1)
		}
		bounds = append(bounds[:at+1], bounds[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
	}
	return len(bounds) - 1
}
