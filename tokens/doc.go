// Package tokens counts tokens exactly as OpenAI's tiktoken does, offline:
// the BPE files are embedded in the binary by tiktoken-go-loader, so the
// first count never reaches the network. Stores count an item's tokens once
// at ingest; the slicer counts again only what redaction changed.
package tokens
