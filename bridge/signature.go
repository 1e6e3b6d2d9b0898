package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/kljensen/snowball/english"

	"github.com/h4r/h4r/internal/words"
)

// Signature is the bridge contract's problem fingerprint of a tool call or a
// trajectory.
type Signature struct {
	Fingerprint  string    `json:"fingerprint"`
	Domain       string    `json:"domain"`
	KeyConcepts  []string  `json:"key_concepts"`
	ToolSequence []string  `json:"tool_sequence"`
	Complexity   float64   `json:"complexity"`
	Embedding    []float32 `json:"embedding,omitempty"`
	// Text is what the signature was made from, which is embedded.
	Text string `json:"-"`
}

// ConceptExtractor turns text into key concepts (the bridge contract's
// extension point).
type ConceptExtractor interface {
	Extract(text string) []string
}

// contentKeys are the parameters a call's text is read from, in order
// .
var contentKeys = []string{"content", "description", "problem", "situation", "question", "query"}

// ExtractSignature returns the signature of a call of tool with params, or
// nil when no parameter carries text (the bridge contract: skipped, not an error).
func ExtractSignature(tool string, params map[string]any, ex ConceptExtractor) *Signature {
	var text string
	for _, k := range contentKeys {
		if v, ok := params[k].(string); ok && strings.TrimSpace(v) != "" {
			text = v
			break
		}
	}
	if text == "" {
		return nil
	}
	domain, _ := params["domain"].(string)
	return signatureOf(text, domain, []string{tool}, ex)
}

func signatureOf(text, domain string, tools []string, ex ConceptExtractor) *Signature {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(text))))
	sig := &Signature{Fingerprint: hex.EncodeToString(sum[:]), Domain: strings.ToLower(strings.TrimSpace(domain)), ToolSequence: tools, Text: text}
	sig.KeyConcepts = ex.Extract(text)
	// The bridge contract's estimate: longer text with more concepts is harder.
	words := len(strings.Fields(text))
	sig.Complexity = min(0.3+float64(words)/200*0.4+float64(len(sig.KeyConcepts))/20*0.3, 1)
	return sig
}

// TechExtractor is the default ConceptExtractor. The bridge contract notes that
// plain tokenisation is "insufficient for technical terminology": words are
// split on anything but letters and digits, stop words dropped, stemmed
// (Snowball English) and mapped through a small table of technical
// synonyms (sql and db are database; optimise, tune, speed and performance
// are one concept), so that a rephrased problem shares its concepts.
type TechExtractor struct{}

// stopWords is the bridge contract's list plus common English function words.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the a an and or but in on at to for of with by from as is was be been
		how what why when which who this that these those it its into about are were do does did can could should
		would will my our your their we you they i me us them not no yes any some all via using use`) {
		stopWords[w] = true
	}
}

// synonyms maps stems to one concept.
var synonyms = map[string]string{
	"sql": "databas", "db": "databas", "postgr": "databas", "postgresql": "databas", "sqlite": "databas", "mysql": "databas",
	"optim": "optim", "optimis": "optim", "tune": "optim", "tuning": "optim", "perform": "optim", "speed": "optim", "fast": "optim", "faster": "optim",
	"golang":  "go",
	"throttl": "ratelimit", "throttle": "ratelimit",
	"ui": "frontend", "front-end": "frontend",
}

// phrases map two consecutive stems to one concept: "rate limiting" is
// what "throttling" is, not a rate and a limit.
var phrases = map[[2]string]string{
	{"rate", "limit"}: "ratelimit",
}

// Extract returns the distinct concepts of text in order of appearance.
func (TechExtractor) Extract(text string) []string {
	textWords := words.Lower(text)
	// The concept of each word, "" for a stop word (which ends a phrase).
	concepts := make([]string, len(textWords))
	for i, w := range textWords {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		stem := english.Stem(w, false)
		if c, ok := synonyms[stem]; ok {
			stem = c
		} else if c, ok := synonyms[w]; ok {
			stem = c
		}
		concepts[i] = stem
	}
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(concepts); i++ {
		c := concepts[i]
		if c == "" {
			continue
		}
		if i+1 < len(concepts) {
			if p, ok := phrases[[2]string{c, concepts[i+1]}]; ok {
				c = p
				i++
			}
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}
