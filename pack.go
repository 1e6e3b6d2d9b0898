package h4r

// Reasons an item is kept or left out of a pack. Every ranked candidate ends
// with exactly one of them in the pack's explainability.
const (
	ReasonKept         = "kept"
	ReasonPolicy       = "policy"        // denied by policy, or its decision could not be made
	ReasonMinScore     = "min_score"     // ranked under the request's min_score
	ReasonBudgetBytes  = "budget_bytes"  // did not fit the byte budget
	ReasonBudgetTokens = "budget_tokens" // did not fit the token budget
	ReasonBudgetItems  = "budget_items"  // past the item budget (or the request's limit)
)

// Pack statuses: degraded means part of the pipeline (a generator, the
// deadline) failed and the pack says what in Warnings.
const (
	StatusOK       = "ok"
	StatusDegraded = "degraded"
)

// Pack is a context pack: the payload of an A2A ContextResult and the body
// of a POST /v1/context-pack answer.
type Pack struct {
	RequestID       string   `json:"request_id,omitempty"`
	Status          string   `json:"status"`
	Results         []Result `json:"results"`
	TotalCount      int      `json:"total_count"`
	QueryDurationMs float64  `json:"query_duration_ms"`
	// SourceNames are the candidate generators asked, sorted: document
	// 003's "sources": ["postgres"]. Sources keeps each one's counts and
	// time beside it, as "sourceStats".
	SourceNames    []string               `json:"sources"`
	Sources        map[string]SourceStats `json:"sourceStats"`
	AgentSlice     AgentSlice             `json:"agentSlice"`
	Explainability Explainability         `json:"explainability"`
}

// Result is one delivered item, as policy left it.
type Result struct {
	ID          string         `json:"id"`
	Kind        string         `json:"kind,omitempty"`
	Text        string         `json:"text"`
	Content     map[string]any `json:"content"` // {} when the item has none: the context-pack contract's client reads an object
	Score       float64        `json:"score"`
	Signals     *Signals       `json:"signals,omitempty"`
	Reason      string         `json:"reason"`
	Explanation string         `json:"explanation"`
	Metadata    ResultMetadata `json:"metadata"`
	// SupersededBy names a newer item, one the caller may see, that
	// supersedes this one (SupersessionProposed: the engine inferred it
	// from a shared subject). Supersedes lists the results of this pack
	// this one supersedes.
	SupersededBy         string   `json:"superseded_by,omitempty"`
	SupersessionProposed bool     `json:"supersession_proposed,omitempty"`
	Supersedes           []string `json:"supersedes,omitempty"`
	// Citation says where an ingested chunk or document comes from; nil
	// for items that name no path or url (memories, traces).
	Citation *Citation `json:"citation,omitempty"`
}

// Citation is the retrieval contract's citation of a result: path (files) or url
// (pages), the blob sha, the 1-based inclusive line range, the score, and
// the kind of source it was ingested from (git, fs, url, doc).
type Citation struct {
	Path       string  `json:"path,omitempty"`
	URL        string  `json:"url,omitempty"`
	SHA        string  `json:"sha,omitempty"`
	SourceType string  `json:"source_type,omitempty"`
	LineRange  []int   `json:"line_range,omitempty"`
	Score      float64 `json:"score"`
}

// CitationOf returns the citation an item's metadata gives (path or url,
// sha, line_range, as ingestion writes them), or nil.
func CitationOf(m Metadata, score float64) *Citation {
	str := func(k string) string { s, _ := m.Extra[k].(string); return s }
	c := Citation{Path: str("path"), URL: str("url"), SHA: str("sha"), SourceType: str("source_type"), Score: score}
	if c.Path == "" && c.URL == "" {
		return nil
	}
	if lr, ok := m.Extra["line_range"].([]any); ok && len(lr) == 2 {
		for _, v := range lr {
			switch n := v.(type) {
			case float64:
				c.LineRange = append(c.LineRange, int(n))
			case int:
				c.LineRange = append(c.LineRange, n)
			}
		}
		if len(c.LineRange) != 2 {
			c.LineRange = nil
		}
	}
	return &c
}

// ResultMetadata describes how a result was found and delivered.
type ResultMetadata struct {
	Source         string   `json:"source"` // generators that found it, "+"-joined: "fulltext+graph"
	CreatedAt      string   `json:"createdAt,omitempty"`
	Redacted       bool     `json:"redacted"`
	RedactedFields []string `json:"redactedFields,omitempty"`
	ByteSize       int      `json:"byteSize"`
	Tokens         int      `json:"tokens"`
	Version        int      `json:"version,omitempty"`
}

// SourceStats counts and times one candidate generator's work.
type SourceStats struct {
	Candidates int     `json:"candidates"`
	Ms         float64 `json:"ms"`
	Error      string  `json:"error,omitempty"`
}

// AgentSlice is the specialist-specific minimal context: what an agent puts
// into its prompt when it has no room for the whole pack.
type AgentSlice struct {
	SpecialistID  string   `json:"specialistId"`
	SecurityLevel string   `json:"securityLevel"`
	Summary       string   `json:"summary"`
	ItemIDs       []string `json:"itemIds"`
	Actions       []string `json:"actions"`
}

// Explainability answers "why was this retrieved, and why was that not?".
type Explainability struct {
	TLDR        TLDR              `json:"tldr"`
	Affordances []Affordance      `json:"affordances"`
	CausalGraph *CausalGraph      `json:"causalGraph"` // null when not asked for, as the context-pack contract shows it
	Slicing     SlicingStats      `json:"slicing"`
	Timings     Timings           `json:"timings"`
	Weights     Weights           `json:"weights"`
	Warnings    []string          `json:"warnings"`
	Items       []ItemExplanation `json:"items"`
}

// ItemExplanation is the verdict on one ranked candidate.
type ItemExplanation struct {
	ID          string  `json:"id"`
	Rank        int     `json:"rank"` // 1-based position in the ranking
	Score       float64 `json:"score"`
	Signals     Signals `json:"signals"`
	Reason      string  `json:"reason"`           // ReasonKept or why it was left out
	Detail      string  `json:"detail,omitempty"` // policy reason, budget numbers
	Redacted    bool    `json:"redacted,omitempty"`
	Explanation string  `json:"explanation"`
	// SupersededBy: as in Result.
	SupersededBy         string `json:"superseded_by,omitempty"`
	SupersessionProposed bool   `json:"supersession_proposed,omitempty"`
}

// TLDR is an extractive summary of the evidence.
type TLDR struct {
	// Summary is Text under the context-pack contract's name (tldr.summary); both are
	// sent so that clients of either keep working.
	Summary   string     `json:"summary"`
	Text      string     `json:"text"`
	Sentences []Sentence `json:"sentences"`
	Citations []string   `json:"citations"`
}

// Sentence is one TL;DR sentence and the item it comes from.
type Sentence struct {
	Text   string  `json:"text"`
	ItemID string  `json:"itemId"`
	Score  float64 `json:"score"`
}

// Affordance is a suggested next action.
type Affordance struct {
	Type        string         `json:"type"`
	Description string         `json:"description"`
	Confidence  float64        `json:"confidence"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Evidence    []string       `json:"evidence,omitempty"` // ids of the items that triggered it
}

// CausalGraph holds the delivered items and the links among them.
type CausalGraph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is one evidence item in the causal graph.
type GraphNode struct {
	ID   string `json:"id"`
	Kind string `json:"kind,omitempty"`
}

// GraphEdge is a directed, typed link between two evidence items.
type GraphEdge struct {
	Source   string  `json:"source"`
	Target   string  `json:"target"`
	Type     string  `json:"type"`
	Strength float64 `json:"strength"`
}

// SlicingStats reports what the policy slicer did.
type SlicingStats struct {
	TotalCandidates    int         `json:"totalCandidates"`
	TotalKept          int         `json:"totalKept"`
	TotalRedacted      int         `json:"totalRedacted"`
	TotalDroppedBudget int         `json:"totalDroppedBudget"`
	TotalDroppedPolicy int         `json:"totalDroppedPolicy"`
	TotalDroppedScore  int         `json:"totalDroppedScore"`
	BudgetUsed         BudgetUsage `json:"budgetUsed"`
	BudgetLimit        BudgetUsage `json:"budgetLimit"`
	PolicyRevision     string      `json:"policyRevision,omitempty"`
	FallbackUsed       bool        `json:"fallbackUsed"`
}

// BudgetUsage counts bytes, tokens and items. The token count is exact
// (tiktoken); the JSON name follows docs/concepts.md.
type BudgetUsage struct {
	Bytes           int `json:"bytes"`
	EstimatedTokens int `json:"estimatedTokens"`
	Items           int `json:"items"`
}

// Timings of the stages, in milliseconds. RetrievalMs is CandidateMs +
// RankingMs.
type Timings struct {
	CandidateMs     float64 `json:"candidateMs"`
	RankingMs       float64 `json:"rankingMs"`
	RetrievalMs     float64 `json:"retrievalMs"`
	SlicingMs       float64 `json:"slicingMs"`
	SummarizationMs float64 `json:"summarizationMs"`
	TotalMs         float64 `json:"totalMs"`
}
