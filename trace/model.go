package trace

import "time"

// ExecutionMode is how the session that made a commit ran.
type ExecutionMode string

// Execution modes.
const (
	ModeClassic ExecutionMode = "classic"
	ModeRLM     ExecutionMode = "rlm"
)

// TraceStatus is where a commit is in its life.
type TraceStatus string

// Trace statuses.
const (
	StatusPending  TraceStatus = "pending"  // committed but not merged
	StatusLanded   TraceStatus = "landed"   // merged to the default branch
	StatusReverted TraceStatus = "reverted" // landed, then reverted
)

// DecisionCategory classifies a decision.
type DecisionCategory string

// Decision categories.
const (
	CategoryArchitecture   DecisionCategory = "architecture"
	CategoryImplementation DecisionCategory = "implementation"
	CategoryTooling        DecisionCategory = "tooling"
	CategoryRecovery       DecisionCategory = "recovery"
	CategoryEscalation     DecisionCategory = "escalation"
)

// RiskLevel is a decision's risk.
type RiskLevel string

// Risk levels.
const (
	RiskLow    RiskLevel = "low"
	RiskMedium RiskLevel = "medium"
	RiskHigh   RiskLevel = "high"
)

// CommitTrace is the document's unit of captured knowledge: one per
// commit. Field names are the document's. Durations are nanoseconds, as
// the document's Go types marshal them.
type CommitTrace struct {
	ID        string    `json:"id"`
	SHA       string    `json:"sha"`
	Repo      string    `json:"repo"`
	Branch    string    `json:"branch"`
	Author    string    `json:"author"`
	Timestamp time.Time `json:"timestamp"`

	Files []FileChange `json:"files"`
	Areas []string     `json:"areas"`
	Stats DiffStats    `json:"stats"`

	Decisions  []Decision    `json:"decisions"`
	ToolCalls  []ToolCall    `json:"tool_calls"`
	Errors     []ErrorRecord `json:"errors"`
	ModelCalls []ModelCall   `json:"model_calls"`

	Mode        ExecutionMode `json:"mode"`
	Iterations  int           `json:"iterations"`
	Escalations []Escalation  `json:"escalations"`
	Duration    time.Duration `json:"duration"`
	TokensUsed  int           `json:"tokens_used"`

	Summary string `json:"summary"`

	Status     TraceStatus `json:"status"`
	LandedAt   *time.Time  `json:"landed_at,omitempty"`
	MergedVia  *string     `json:"merged_via,omitempty"`
	RevertedBy *string     `json:"reverted_by,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// RestrictedToGroups is H4R's addition to the document (whose "per-repo
	// access controls" are future work): the groups a specialist must be
	// in to see this trace and its decisions. It becomes the items'
	// metadata.restrictedToGroups, which the policy enforces.
	RestrictedToGroups []string `json:"restricted_to_groups,omitempty"`
}

// FileChange is one file a commit touched.
type FileChange struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	Status  string `json:"status"` // A, M, D, R
}

// DiffStats counts a commit's changes.
type DiffStats struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// Decision is the atomic unit of reasoning; a trace holds several.
type Decision struct {
	ID         string           `json:"id"`
	TraceID    string           `json:"trace_id"`
	Timestamp  time.Time        `json:"timestamp"`
	Context    string           `json:"context"`
	Options    []Option         `json:"options"`
	Selected   int              `json:"selected"`
	Reasoning  string           `json:"reasoning"`
	Category   DecisionCategory `json:"category"`
	Risk       RiskLevel        `json:"risk"`
	Reversible bool             `json:"reversible"`
	Auto       bool             `json:"auto"`
	Confidence float64          `json:"confidence"`
	Area       string           `json:"area"`
}

// Option is one alternative a decision considered.
type Option struct {
	Description string   `json:"description"`
	Pros        []string `json:"pros,omitempty"`
	Cons        []string `json:"cons,omitempty"`
}

// ToolCall is one tool the session ran.
type ToolCall struct {
	ID        string         `json:"id"`
	Tool      string         `json:"tool"`
	Args      map[string]any `json:"args"`
	Result    string         `json:"result"`
	Success   bool           `json:"success"`
	Duration  time.Duration  `json:"duration"`
	Timestamp time.Time      `json:"timestamp"`
}

// ErrorRecord is one error the session met, and what fixed it.
type ErrorRecord struct {
	ID         string    `json:"id"`
	Message    string    `json:"message"`
	Tool       string    `json:"tool,omitempty"`
	Recovery   string    `json:"recovery,omitempty"`
	Iterations int       `json:"iterations"`
	Timestamp  time.Time `json:"timestamp"`
}

// ModelCall is one model interaction.
type ModelCall struct {
	ID        string        `json:"id"`
	Model     string        `json:"model"`
	Provider  string        `json:"provider"`
	Tokens    TokenUsage    `json:"tokens"`
	Duration  time.Duration `json:"duration"`
	Reasoning string        `json:"reasoning,omitempty"`
	Timestamp time.Time     `json:"timestamp"`
}

// TokenUsage counts a model call's tokens.
type TokenUsage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
	Cached int `json:"cached,omitempty"`
}

// Escalation is one RLM tier change.
type Escalation struct {
	FromTier  int       `json:"from_tier"`
	ToTier    int       `json:"to_tier"`
	Reason    string    `json:"reason"`
	Iteration int       `json:"iteration"`
	Timestamp time.Time `json:"timestamp"`
}
