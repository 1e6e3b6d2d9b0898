// Package tokens counts tokens exactly as OpenAI's tiktoken does, offline:
// the BPE files are embedded in the binary by tiktoken-go-loader, so the
// first count never reaches the network. cl100k_base, the default, is
// counted by this package's own pre-tokenizer and byte-pair merge, which
// the tests hold equal to tiktoken-go's on the shared datasets, on every
// character and under fuzzing; o200k_base is counted by tiktoken-go. Stores
// count an item's tokens once at ingest; the slicer counts again only what
// redaction changed.
package tokens
