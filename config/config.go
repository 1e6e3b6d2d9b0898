package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r"
)

// Config holds every setting of an H4R process. The zero value is not
// useful: start from Default or FromEnv.
type Config struct {
	Addr    string // H4R_ADDR: where the HTTP server listens
	DataDir string // H4R_DATA_DIR: the SQLite file is DataDir/h4r.db

	Weights            h4r.Weights // H4R_WEIGHT_RELEVANCE … H4R_WEIGHT_SENSITIVITY
	RecencyDecayLambda float64     // H4R_RECENCY_DECAY_LAMBDA: recency = exp(−λ·age_days)
	MaxHops            int         // H4R_MAX_HOPS: causal hops from the anchors
	CausalLinkTypes    string      // H4R_CAUSAL_LINK_TYPES: links the causal hops follow (LinkTypes parses it)

	// External backends; empty means the embedded default.
	DatabaseURL string // DATABASE_URL (Postgres)
	QdrantURL   string // QDRANT_URL
	Neo4jURL    string // NEO4J_URL

	// Store writes and Postgres pools.
	PGMaxReadConns  int           // H4R_PG_MAX_READ_CONNS: the Postgres pool reads use
	PGMaxWriteConns int           // H4R_PG_MAX_WRITE_CONNS: the Postgres pool writes use
	WriteTimeout    time.Duration // H4R_WRITE_TIMEOUT: deadline of one store write
	ItemCacheMB     int           // H4R_ITEM_CACHE_MB: memory of the store's decoded-item cache
	SQLiteSync      string        // H4R_SQLITE_SYNC: full or normal (PRAGMA synchronous)

	// VectorANNThreshold is H4R_VECTOR_ANN_THRESHOLD: vectors from which
	// the in-process vector index is approximate (0: never).
	VectorANNThreshold int

	MaxBytesDefault  int // SCS_MAX_BYTES_DEFAULT
	MaxTokensDefault int // SCS_MAX_TOKENS_DEFAULT
	MaxItemsDefault  int // SCS_MAX_ITEMS_DEFAULT

	PolicyDir             string        // SCS_POLICY_DIR: empty means the bundled policy
	OPAURL                string        // SCS_OPA_URL: empty means embedded OPA
	OPAFallbackLocal      bool          // SCS_OPA_FALLBACK_LOCAL
	OPACacheTTL           time.Duration // SCS_OPA_CACHE_TTL: 0 turns the decision cache off
	OPACompiledPredicates int           // SCS_OPA_COMPILED_PREDICATES: 0 turns compiled predicates off

	TLDRSentences int  // CONTEXT_PACK_TLDR_SENTENCES
	IncludeGraph  bool // CONTEXT_PACK_INCLUDE_GRAPH

	TokenEncoding        string        // H4R_TOKEN_ENCODING: cl100k_base or o200k_base
	RequestTimeout       time.Duration // H4R_REQUEST_TIMEOUT
	GeneratorTimeout     time.Duration // H4R_GENERATOR_TIMEOUT
	AmbientRelevance     float64       // H4R_AMBIENT_RELEVANCE
	AmbientDebounce      time.Duration // H4R_AMBIENT_DEBOUNCE
	AmbientMaxPerSession int           // H4R_AMBIENT_MAX_PER_SESSION
	AmbientMaxPerKey     int           // H4R_AMBIENT_MAX_PER_KEY
	MaxBodyBytes         int64         // H4R_MAX_BODY_BYTES
	MaxConnections       int           // H4R_MAX_CONNECTIONS: HTTP connections served at once
	// H4R_MAX_CONNECTIONS_PER_ADDR: connections of one remote address; 0: no cap
	MaxConnectionsPerAddr int
	// H4R_UNAUTHENTICATED_BODY_BYTES: bytes of bodies read before authentication; 0: no bound
	UnauthenticatedBodyBytes int64
	MCPMaxBatch              int     // H4R_MCP_MAX_BATCH: calls in one JSON-RPC batch on /mcp
	GCHeadroomMB             int     // H4R_GC_HEADROOM_MB: garbage allowed above the live heap; 0: Go's GOGC pacing alone
	DebugAddr                string  // H4R_DEBUG_ADDR: loopback listener of Go's runtime profiles; "": none
	LowRelevanceThreshold    float64 // H4R_LOW_RELEVANCE_THRESHOLD: best relevance under it → request_more_context

	LogLevel  string // H4R_LOG_LEVEL: debug, info, warn or error
	LogFormat string // H4R_LOG_FORMAT: json or text

	ConfigFile string // H4R_CONFIG: the YAML file read before the environment

	WeightsFile string // H4R_WEIGHTS_FILE: tuned weights (h4r bench tune) that replace the H4R_WEIGHT_* values

	// Who may ask.
	APIKeysFile        string        // H4R_API_KEYS_FILE: API keys (SHA-256 hashes) and the principal of each
	TenantsFile        string        // H4R_TENANTS_FILE: the tenants h4r serve serves besides the default one
	Tenant             string        // H4R_TENANT: the tenant the command-line commands act on
	AnonymousAudit     bool          // H4R_ANONYMOUS_AUDIT: without keys, packs explain what policy hid
	MCPAPIKey          string        // H4R_MCP_API_KEY: the key whose principal h4r mcp (stdio) answers for
	RateLimitPerMinute int           // H4R_RATE_LIMIT_PER_MINUTE: requests per minute per key and route class
	ShutdownGrace      time.Duration // H4R_SHUTDOWN_GRACE: how long in-flight requests may finish on SIGTERM

	// The A2A protocol endpoint.
	A2APublicURL    string        // H4R_A2A_PUBLIC_URL: base URL the agent card advertises
	A2ATaskTTL      time.Duration // H4R_A2A_TASK_TTL: how long an A2A task may be read
	A2ATaskMax      int           // H4R_A2A_TASK_MAX: A2A tasks kept at most
	A2ATaskMaxBytes int64         // H4R_A2A_TASK_MAX_BYTES: bytes of A2A tasks kept at most

	// Vectors and hybrid relevance.
	Embedder             string        // H4R_EMBEDDER: learned or hash (built in, offline), openai (an OpenAI-compatible /v1/embeddings server) or none
	EmbedURL             string        // H4R_EMBED_URL: base URL of the embeddings server
	EmbedModel           string        // H4R_EMBED_MODEL
	EmbedAPIKey          string        // H4R_EMBED_API_KEY
	EmbedDim             int           // H4R_EMBED_DIM: dimension of the built-in hashing embedder
	EmbedLearnedDim      int           // H4R_EMBED_LEARNED_DIM: dimension of the learned embedder
	VectorCandidates     int           // H4R_VECTOR_CANDIDATES: most hits of the vector generator
	VectorFeedbackDocs   int           // H4R_VECTOR_FEEDBACK_DOCS: best first-pass items the query vector moves toward; 0: off
	VectorFeedbackWeight float64       // H4R_VECTOR_FEEDBACK_WEIGHT: share of their mean in the moved query vector
	VectorFeedbackSpread float64       // H4R_VECTOR_FEEDBACK_MIN_SPREAD: spread of the full-text top under which the query vector stays
	EmbedTimeout         time.Duration // H4R_EMBED_TIMEOUT: deadline of one embedding call
	EmbedCacheSize       int           // H4R_EMBED_CACHE_SIZE: query embeddings kept (LRU); 0 turns the cache off
	Fusion               string        // H4R_FUSION: relative (min-max) or rrf
	AccessCounting       string        // H4R_ACCESS_COUNTING: use or delivery
	StopWords            string        // H4R_STOP_WORDS: english, none or a file of stop words
	FusionVector         float64       // H4R_FUSION_VECTOR_WEIGHT: share of the vector generator in relevance
	Conversation         bool          // H4R_CONVERSATION: session and time evidence of conversations
	FusionSession        float64       // H4R_FUSION_SESSION_WEIGHT: weight of the session evidence in relevance
	FusionTime           float64       // H4R_FUSION_TIME_WEIGHT: weight of the time evidence in relevance
	QdrantAPIKey         string        // QDRANT_API_KEY
	QdrantCollection     string        // QDRANT_COLLECTION

	// Neo4j.
	Neo4jUser     string // NEO4J_USER
	Neo4jPassword string // NEO4J_PASSWORD
	Neo4jDatabase string // NEO4J_DATABASE

	// Policy authoring, reload, remote OPA, audit.
	OPATimeout  time.Duration // SCS_OPA_TIMEOUT: deadline of one call to a remote OPA
	PolicyWatch bool          // SCS_POLICY_WATCH: reload SCS_POLICY_DIR when it changes
	PolicyNet   bool          // SCS_POLICY_NETWORK: embedded policies may call http.send, net.lookup_ip_addr, opa.runtime
	DecisionLog string        // SCS_DECISION_LOG: where drop/redact decisions are logged: a file path, "stdout", or empty for none

	// Commit traces (trace/): NATS capture, GitHub outcomes, summaries,
	// OpenTelemetry export.
	NATSURL             string        // NATS_URL: empty: no trace consumer
	NATSCreds           string        // NATS_CREDS: credentials file
	TraceSubject        string        // H4R_TRACE_SUBJECT
	LandedSubject       string        // H4R_LANDED_SUBJECT
	TraceStream         string        // H4R_TRACE_STREAM
	TraceDurable        string        // H4R_TRACE_DURABLE
	TraceDeadLetter     string        // H4R_TRACE_DEAD_LETTER_SUBJECT: where traces that cannot be stored go; empty: dropped
	DecisionSubject     string        // H4R_TRACE_DECISION_SUBJECT: fan-out of individual decisions; empty: off
	LandingBranches     string        // H4R_LANDING_BRANCHES: branches besides the default whose merges land traces
	GitHubWebhookSecret string        // H4R_GITHUB_WEBHOOK_SECRET: empty refuses every delivery
	SummaryURL          string        // H4R_SUMMARY_URL: OpenAI-compatible chat server; empty: fallback summaries
	SummaryModel        string        // H4R_SUMMARY_MODEL
	SummaryAPIKey       string        // H4R_SUMMARY_API_KEY
	SummaryTimeout      time.Duration // H4R_SUMMARY_TIMEOUT
	OTLPEndpoint        string        // OTEL_EXPORTER_OTLP_ENDPOINT: empty: no span export
	// Agents: stored packs (POST /query, /feedback).
	PackRetention int // H4R_PACK_RETENTION: packs kept for feedback; 0: all

	// The context bridge.
	BridgeEnabled        bool          // H4R_BRIDGE_ENABLED: feature flag
	BridgeTools          string        // H4R_BRIDGE_TOOLS: comma-separated allow-list
	BridgeMinSimilarity  float64       // H4R_BRIDGE_MIN_SIMILARITY
	BridgeMaxMatches     int           // H4R_BRIDGE_MAX_MATCHES
	BridgeCacheSize      int           // H4R_BRIDGE_CACHE_SIZE
	BridgeTimeout        time.Duration // H4R_BRIDGE_TIMEOUT
	BridgeEmbedTimeout   time.Duration // H4R_BRIDGE_EMBED_TIMEOUT
	BridgeIndexRefresh   time.Duration // H4R_BRIDGE_INDEX_REFRESH
	BridgeRolloutPercent int           // H4R_BRIDGE_ROLLOUT_PERCENT: share of sessions enriched
	MCPUpstreamURL       string        // H4R_MCP_UPSTREAM_URL: an MCP server whose tools are re-exposed
	MCPUpstreamCommand   string        // H4R_MCP_UPSTREAM_COMMAND: or one started over stdio
	MCPUpstreamPrefix    string        // H4R_MCP_UPSTREAM_PREFIX
	// Source ingestion (POST /ingest, h4r ingest-source).
	IngestRoots              string // H4R_INGEST_ROOTS: comma-separated folders the server may ingest from
	IngestMaxFileBytes       int64  // H4R_INGEST_MAX_FILE_BYTES
	IngestCredentialPatterns string // H4R_INGEST_CREDENTIAL_PATTERNS: comma-separated file name patterns
	IngestCredentials        string // H4R_INGEST_CREDENTIALS: flag or skip
	IngestAllowPrivateURLs   bool   // H4R_INGEST_ALLOW_PRIVATE_URLS
	ChunkMaxTokens           int    // H4R_CHUNK_MAX_TOKENS
	ChunkOverlapTokens       int    // H4R_CHUNK_OVERLAP_TOKENS

	// Pseudo-relevance feedback (engine.Settings.Expansion).
	QueryExpansion     bool    // H4R_QUERY_EXPANSION: on for requests that do not say
	ExpansionDocs      int     // H4R_EXPANSION_DOCS: feedback documents
	ExpansionTerms     int     // H4R_EXPANSION_TERMS: words added
	ExpansionWeight    float64 // H4R_EXPANSION_ORIGINAL_WEIGHT: the original query's share
	ExpansionFirstPass float64 // H4R_EXPANSION_FIRST_PASS_WEIGHT: the first pass's share of a hit's score
	ExpansionContrast  bool    // H4R_EXPANSION_CONTRAST: KL term selection against the whole first pass
}

// Var describes one environment variable: its name, its default as it would
// be written in a .env file ("" means unset), and what it does.
type Var struct {
	Name        string
	Default     string
	Description string
	// Aliases are other names the variable is read under (a duration's old
	// _MS name, in milliseconds). The name wins when both are set.
	Aliases []string
	// Secret values are never printed (h4r config masks them).
	Secret bool
	// Essential variables are the ones a new deployment looks at first;
	// the reference lists them apart from the tuning knobs.
	Essential bool
}

// Vars returns every variable H4R reads, in a stable order (the order of
// .env.example). The slice is new on each call.
func Vars() []Var {
	t := table()
	out := make([]Var, len(t))
	for i, v := range t {
		out[i] = v.Var
	}
	return out
}

// Default returns the configuration with every variable at its default: the
// defaults of Vars, parsed.
func Default() Config {
	var c Config
	for _, v := range table() {
		if v.Default == "" {
			continue
		}
		if err := v.parse(&c, v.Default); err != nil {
			// The table is code, and a test parses every default: this
			// cannot happen in a build that passed its tests.
			panic(fmt.Sprintf("config: the default of %s does not parse: %v", v.Name, err))
		}
	}
	return c
}

// FromEnv reads the variables of Vars through lookup (os.LookupEnv in a real
// process) on top of Default, then validates the result. A variable that is
// unset, empty or only white space keeps its default, so that an unedited
// copy of .env.example changes nothing. Every invalid value is reported,
// joined into one error; each part is an *h4r.Error whose Field is the
// variable's name.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	l, err := Load(lookup)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	return l.Config, nil
}

// Validate checks every setting and the rules that tie settings together.
// It reports every problem, joined; each is an *h4r.Error whose Field names
// the variable that sets the offending value.
func (c Config) Validate() error {
	var errs []error
	for _, v := range table() {
		if err := v.check(c); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Weights == (h4r.Weights{}) {
		errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_WEIGHT_*",
			"at least one of H4R_WEIGHT_RELEVANCE … H4R_WEIGHT_SENSITIVITY must be positive, all are 0"))
	}
	// A generator deadline past the request's would never fire: the request
	// would time out first and the pack would lose every generator at once.
	// A request timeout that is itself invalid was reported above.
	if c.RequestTimeout > 0 && c.GeneratorTimeout > c.RequestTimeout {
		errs = append(errs, h4r.Errorf(h4r.EINVALID, "H4R_GENERATOR_TIMEOUT",
			"want at most H4R_REQUEST_TIMEOUT (%s), got %q", fmtDuration(c.RequestTimeout), fmtDuration(c.GeneratorTimeout)))
	}
	return errors.Join(errs...)
}

// SQLitePath returns the path of the embedded store's database file.
func (c Config) SQLitePath() string {
	return filepath.Join(c.DataDir, "h4r.db")
}

// Logger returns a logger writing to w in LogFormat at LogLevel. It assumes
// Validate passed; an unknown level logs at info, an unknown format as JSON.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// UnknownVars returns the names in environ ("NAME=value" entries, as from
// os.Environ) that carry one of H4R's prefixes (H4R_, SCS_, CONTEXT_PACK_)
// but are not in Vars, sorted. A misspelt variable is otherwise silently
// ignored; callers log these as warnings.
func UnknownVars(environ []string) []string {
	known := map[string]bool{}
	for _, v := range table() {
		known[v.Name] = true
		for _, a := range v.Aliases {
			known[a] = true
		}
		if v.Secret {
			known[v.Name+"_FILE"] = true
		}
	}
	var unknown []string
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		if known[name] {
			continue
		}
		for _, p := range []string{"H4R_", "SCS_", "CONTEXT_PACK_"} {
			if strings.HasPrefix(name, p) {
				unknown = append(unknown, name)
				break
			}
		}
	}
	slices.Sort(unknown)
	return slices.Compact(unknown)
}
