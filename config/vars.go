package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/tokens"
)

// variable is one row of the table: the Var, how to parse its text into a
// Config, and how to check the value a Config holds. parse receives trimmed,
// non-empty text and rejects what check would reject, so that FromEnv can
// quote the text the user wrote; check also covers configurations built in
// code.
type variable struct {
	Var
	parse func(c *Config, value string) error
	// parseAlias reads the value of an alias (Var.Aliases), whose format
	// may differ (a duration's _MS alias is whole milliseconds).
	parseAlias func(c *Config, value string) error
	check      func(c Config) error
	// get reads the value back, for h4r config.
	get func(c Config) any
}

// tuned ends the description of every default weight: where it came from.
const tuned = " Default tuned by h4r bench tune on scifact, cisi, cranfield and the synthetic set (bench/RESULTS.md)."

// table is the one list of variables. Vars, Default, FromEnv, Validate and
// EnvExample all derive from it; a new setting is one new row here.
func table() []variable {
	weight := func(s h4r.Signal, def, what string) variable {
		return number("H4R_WEIGHT_"+strings.ToUpper(s.String()), def,
			"Ranking weight of the "+s.String()+" signal ("+what+")."+tuned,
			func(c *Config) *float64 { return &c.Weights[s] }, 0, math.Inf(1))
	}
	return marked([]variable{
		text("H4R_CONFIG", "", "YAML file of settings, read before the environment (which overrides it): a mapping from these variables' names, in any case, to values, e.g. h4r_addr: 127.0.0.1:9090 or h4r_request_timeout: 3s. An unknown key is an error naming it. Also --config FILE on any command. h4r config prints the effective settings and where each came from.",
			func(c *Config) *string { return &c.ConfigFile }, nil),
		text("H4R_ADDR", "127.0.0.1:8080", "Address the HTTP server listens on, host:port.",
			func(c *Config) *string { return &c.Addr }, checkAddr),
		text("H4R_DATA_DIR", "./data", "Directory of the embedded store; the SQLite file is h4r.db in it.",
			func(c *Config) *string { return &c.DataDir }, checkNotEmpty),

		weight(h4r.Relevance, "0.475", "how well the item matches the query text"),
		weight(h4r.Recency, "0.05", "exp(-lambda * age in days)"),
		weight(h4r.Frequency, "0.05", "how often the item was accessed"),
		weight(h4r.Importance, "0.05", "metadata.importance"),
		weight(h4r.Causality, "0.2", "1/(1+hops) from the anchors"),
		weight(h4r.Novelty, "0.05", "1 - metadata.novelty"),
		weight(h4r.Trust, "0.075", "metadata.trust"),
		weight(h4r.Sensitivity, "0.05", "1 - metadata.sensitivity"),
		text("H4R_WEIGHTS_FILE", "", "JSON file of tuned weights and lambda written by h4r bench tune; when set, it replaces the H4R_WEIGHT_* values and H4R_RECENCY_DECAY_LAMBDA.",
			func(c *Config) *string { return &c.WeightsFile }, nil),
		number("H4R_RECENCY_DECAY_LAMBDA", "0.1", "Decay rate lambda of the recency signal, per day: an item 7 days old scores exp(-0.7) = 0.50 at 0.1.",
			func(c *Config) *float64 { return &c.RecencyDecayLambda }, 0, math.Inf(1)),
		oneOf("H4R_ACCESS_COUNTING", "use", "What raises an item's accessCount, the frequency signal: use (an explicit read of the item by id, or feedback that marks it useful) or delivery (every pack that delivers it; this makes frequency a popularity loop: items that matched earlier queries win later ones).",
			func(c *Config) *string { return &c.AccessCounting }, "use", "delivery"),
		text("H4R_STOP_WORDS", "english", "Words full-text queries leave out (the index keeps them): english (Snowball's 127-word list, the one Postgres's english configuration drops), none, or the path of a file of words separated by spaces or lines (# starts a comment line). On Postgres the english words are dropped at indexing whatever this says.",
			func(c *Config) *string { return &c.StopWords }, checkStopWords),
		boolean("H4R_QUERY_EXPANSION", "false", "Pseudo-relevance feedback for requests that do not say (query.expand asks for it or against it per request): the full-text query is expanded with the words of its top hits and asked again (docs/retrieval.md).",
			func(c *Config) *bool { return &c.QueryExpansion }),
		whole("H4R_EXPANSION_DOCS", "5", "Top full-text hits pseudo-relevance feedback takes as relevant; a first pass with fewer hits is not expanded.",
			func(c *Config) *int { return &c.ExpansionDocs }, 1, 100),
		whole("H4R_EXPANSION_TERMS", "10", "Words pseudo-relevance feedback adds to the query.",
			func(c *Config) *int { return &c.ExpansionTerms }, 1, 60),
		number("H4R_EXPANSION_ORIGINAL_WEIGHT", "0.7", "Share of the original query in the expanded one (RM3's lambda); the added words share the rest.",
			func(c *Config) *float64 { return &c.ExpansionWeight }, 0, 0.99),
		number("H4R_EXPANSION_FIRST_PASS_WEIGHT", "0", "Share of the first (unexpanded) pass in a hit's full-text score under pseudo-relevance feedback, each pass's scores divided by its best; 0: the expanded pass alone.",
			func(c *Config) *float64 { return &c.ExpansionFirstPass }, 0, 0.99),
		boolean("H4R_EXPANSION_CONTRAST", "false", "Pseudo-relevance feedback picks the words that set the top hits apart from every full-text hit (their share of the KL divergence) rather than the most probable words of the top hits.",
			func(c *Config) *bool { return &c.ExpansionContrast }),
		whole("H4R_MAX_HOPS", "3", "Most causal hops followed from the anchors when a request does not say.",
			func(c *Config) *int { return &c.MaxHops }, 1, h4r.MaxHopsLimit),
		text("H4R_CAUSAL_LINK_TYPES", DefaultCausalLinkTypes, "Link types the causal hops from the anchors follow (the causality signal) when a request does not name link_types: comma-separated, or all for every type. The default leaves out links of order or containment (follows, contains, part_of), of likeness (similar_to, relates_to) and of place (about_file, modifies_file): the turn after a hit or the chunk next to it is not its cause (bench/RESULTS.md, conversation memory).",
			func(c *Config) *string { return &c.CausalLinkTypes }, checkLinkTypes),

		serviceURL("DATABASE_URL", "Postgres store, e.g. postgres://h4r:secret@localhost:5432/h4r. Empty: the embedded SQLite store.",
			func(c *Config) *string { return &c.DatabaseURL }, "postgres", "postgresql"),
		serviceURL("QDRANT_URL", "Qdrant vector search over gRPC, e.g. http://localhost:6334. Empty: exact vector search in the embedded store.",
			func(c *Config) *string { return &c.QdrantURL }, "http", "https"),
		serviceURL("NEO4J_URL", "Neo4j for causal hops, e.g. neo4j://localhost:7687. Empty: hops in the store.",
			func(c *Config) *string { return &c.Neo4jURL }, "neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"),
		whole("H4R_PG_MAX_READ_CONNS", "8", "Connections of the Postgres pool that reads (context packs, item reads) use (with DATABASE_URL).",
			func(c *Config) *int { return &c.PGMaxReadConns }, 1, 1000),
		whole("H4R_PG_MAX_WRITE_CONNS", "4", "Connections of the Postgres pool that writes (ingest, delete, access counts) use, apart from the reads' pool so that writers waiting for locks never hold the connections reads need: how many writes of one replica run at once.",
			func(c *Config) *int { return &c.PGMaxWriteConns }, 1, 1000),
		duration("H4R_WRITE_TIMEOUT", "5s", "Deadline of one store write (an ingest batch, a delete): waiting for the writer behind other writes, and the write itself. A write past it is rolled back and answered 503 unavailable with Retry-After.",
			func(c *Config) *time.Duration { return &c.WriteTimeout }, time.Millisecond, 10*time.Minute),
		whole("H4R_VECTOR_ANN_THRESHOLD", "0", "Number of item vectors from which the in-process vector index (embedded store, and Postgres without QDRANT_URL) searches approximately: an inverted file of about √n lists, scanning the nearest, then rescoring exactly (recall@100 at least 0.95 against the exact scan; index/ann/PERFORMANCE.md). Below it every search scans every vector. Re-clustering (at the threshold, then whenever the count doubles) runs in the background on a copy while searches and writes go on. 0, the default: always exact, because the built-in embedders' vectors barely cluster (the learned one's too, on the benchmark corpus), so the calibrated index scans most of its lists and gains little or nothing over the exact scan, while each re-clustering holds a second copy of the codes and costs CPU in proportion to the count (index/ann/PERFORMANCE.md); with a semantic embedder (H4R_EMBEDDER=openai) use 100000.",
			func(c *Config) *int { return &c.VectorANNThreshold }, 0, math.MaxInt),

		whole("H4R_ITEM_CACHE_MB", "256", "Memory, in MiB (estimated per item), of the store's cache of decoded items (each process's, on either store), which full-text, vector and hop candidates are read through instead of decoding each hit from its row on every pack; every read still checks each hit's version and access counts in the store (on Postgres in the query that finds the hit), so another process's or replica's writes are never served stale. On the embedded store it also keeps the filtered columns (kind, tags, creation time, metadata) of the rows the generators test a request's filters on, so that a filtered search tests them in memory. A cache that cannot hold every item of its store (found at its first eviction, or on the embedded store at start) keeps only the items reads come back to, so at a million items it holds far less than its budget. /metrics shows how often reads find their items in it and what it holds (h4r_item_cache_*); docs/operations.md (Sizing) says when a large store gains nothing from it. 0 turns it off (store/sqlite/PERFORMANCE.md, store/postgres/PERFORMANCE.md).",
			func(c *Config) *int { return &c.ItemCacheMB }, 0, 1<<20),
		oneOf("H4R_SQLITE_SYNC", "full", "How durable a write to the embedded store is once answered (SQLite's PRAGMA synchronous, in WAL mode): full syncs the write-ahead log at every commit, so an answered write survives a crash of the process and a power loss or OS crash; normal syncs only at checkpoints, so an answered write survives a crash of the process, but a power loss or OS crash may lose the last commits (the file stays consistent, never corrupt). full costs one sync of the log per write (measure on your disk: go test ./store/sqlite -run NONE -bench UpsertSync). Postgres has its own settings (synchronous_commit).",
			func(c *Config) *string { return &c.SQLiteSync }, "full", "normal"),

		whole("SCS_MAX_BYTES_DEFAULT", "122880", "Byte budget of a context pack (items as delivered, after redaction); a request may ask for less.",
			func(c *Config) *int { return &c.MaxBytesDefault }, 1, math.MaxInt),
		whole("SCS_MAX_TOKENS_DEFAULT", "30000", "Token budget of a context pack, counted exactly with H4R_TOKEN_ENCODING; a request may ask for less.",
			func(c *Config) *int { return &c.MaxTokensDefault }, 1, math.MaxInt),
		whole("SCS_MAX_ITEMS_DEFAULT", "100", "Most items in a context pack; a request may ask for less.",
			func(c *Config) *int { return &c.MaxItemsDefault }, 1, math.MaxInt),
		text("SCS_POLICY_DIR", "", "Directory of Rego files, or an OPA bundle (.tar.gz), declaring package cmo.context, replacing the bundled policy. Empty: the bundled policy.",
			func(c *Config) *string { return &c.PolicyDir }, nil),
		serviceURL("SCS_OPA_URL", "Remote OPA server to ask for decisions, e.g. http://localhost:8181. Empty: OPA embedded in the process.",
			func(c *Config) *string { return &c.OPAURL }, "http", "https"),
		boolean("SCS_OPA_FALLBACK_LOCAL", "false", "When policy evaluation fails, decide with the same rules in Go instead of dropping the item.",
			func(c *Config) *bool { return &c.OPAFallbackLocal }),
		whole("SCS_OPA_COMPILED_PREDICATES", "256", "How many compiled policy predicates the embedded policy keeps, one per distinct specialist as the policy sees it: partial evaluation with the item unknown, run as Go code, with OPA deciding whatever it cannot compile (policy/PERFORMANCE.md). 0 turns compilation off: every item is evaluated by OPA.",
			func(c *Config) *int { return &c.OPACompiledPredicates }, 0, 1<<20),
		duration("SCS_OPA_CACHE_TTL", "5s", "How long a policy decision is cached (embedded or remote OPA; keyed by policy revision, specialist and item version); 0 turns the cache off.",
			func(c *Config) *time.Duration { return &c.OPACacheTTL }, 0, time.Hour),

		whole("CONTEXT_PACK_TLDR_SENTENCES", "5", "Sentences in a pack's TL;DR when a request does not say; 0 leaves it out.",
			func(c *Config) *int { return &c.TLDRSentences }, 0, h4r.MaxTLDRSentences),
		boolean("CONTEXT_PACK_INCLUDE_GRAPH", "false", "Include the causal graph among the evidence when a request does not say (include_graph: true asks for it per request).",
			func(c *Config) *bool { return &c.IncludeGraph }),

		oneOf("H4R_TOKEN_ENCODING", tokens.CL100K, "Tokenizer for token budgets, counted offline: cl100k_base (GPT-4) or o200k_base (GPT-4o).",
			func(c *Config) *string { return &c.TokenEncoding }, tokens.CL100K, tokens.O200K),
		duration("H4R_REQUEST_TIMEOUT", "2s", "Deadline of one context request.",
			func(c *Config) *time.Duration { return &c.RequestTimeout }, time.Millisecond, 10*time.Minute),
		duration("H4R_GENERATOR_TIMEOUT", "1s", "Deadline of each candidate generator; at most H4R_REQUEST_TIMEOUT. A late generator is skipped with a warning.",
			func(c *Config) *time.Duration { return &c.GeneratorTimeout }, time.Millisecond, 10*time.Minute),
		whole("H4R_MAX_BODY_BYTES", "4194304", "Largest request body accepted, in bytes (ingest batches included).",
			func(c *Config) *int64 { return &c.MaxBodyBytes }, 1, 1<<30),
		whole("H4R_MAX_CONNECTIONS", "512", "Most HTTP connections served at once; one more is answered 503 unavailable with Retry-After and closed. Each may hold a body of up to H4R_MAX_BODY_BYTES while it is read.",
			func(c *Config) *int { return &c.MaxConnections }, 1, 1_000_000),
		whole("H4R_MAX_CONNECTIONS_PER_ADDR", "128", "Most HTTP connections served at once from one remote address (IP), so that one client holding connections open (slowloris: headers sent a line at a time) cannot fill H4R_MAX_CONNECTIONS; one more is answered 503 unavailable with Retry-After and closed. Behind a reverse proxy every client has the proxy's address: set it to H4R_MAX_CONNECTIONS there. 0: no cap per address. Headers must arrive within 5 s of the connection (or of the previous request) whatever this says.",
			func(c *Config) *int { return &c.MaxConnectionsPerAddr }, 0, 1_000_000),
		whole("H4R_UNAUTHENTICATED_BODY_BYTES", "67108864", "Most bytes of request bodies held at once, all clients together, before they are authenticated: GitHub webhook deliveries, whose signature covers the whole body, so each is read before it can be checked (up to 25 MiB each). A body that finds no room within a second is answered 503 unavailable with Retry-After. The default (64 MiB) holds two of GitHub's largest deliveries; below 25 MiB the largest can never be read. 0: no bound.",
			func(c *Config) *int64 { return &c.UnauthenticatedBodyBytes }, 0, 1<<40),
		whole("H4R_MCP_MAX_BATCH", "20", "Most calls in one JSON-RPC batch on /mcp (MCP protocol versions before 2025-06-18 allow batches); a larger batch is answered 400 with a JSON-RPC Invalid Request error. Each call of a batch counts against the key's rate limit (H4R_RATE_LIMIT_PER_MINUTE, the mcp bucket).",
			func(c *Config) *int { return &c.MCPMaxBatch }, 1, 10_000),
		whole("H4R_GC_HEADROOM_MB", "128", "Garbage, in MiB, the Go collector may let pile up above the live heap before it collects (h4r serve, mcp and bench latency): GOGC is set after each collection to this headroom over the live heap, never below 10, and at most 400, or at most your GOGC if you set one. A large index no longer doubles the resident set, and a small heap is collected less often than Go's default. 0: Go's GOGC alone. GOMEMLIMIT still applies.",
			func(c *Config) *int { return &c.GCHeadroomMB }, 0, 1<<20),
		text("H4R_DEBUG_ADDR", "", "Address of a second listener of h4r serve that serves Go's runtime profiles (/debug/pprof/: CPU, heap, allocations, goroutines, mutex and block waits, execution trace) for go tool pprof, from the start, so that opening and warming a store can be profiled too. Loopback only (127.0.0.1, ::1 or localhost), because the profiles have no authentication; reach it from elsewhere through an SSH tunnel or kubectl port-forward. Empty, the default: no listener. docs/operations.md (Profiling).",
			func(c *Config) *string { return &c.DebugAddr }, checkDebugAddr),
		number("H4R_AMBIENT_RELEVANCE", "0.75", "Relevance a precedent must exceed to be pushed on GET /v1/subscribe.",
			func(c *Config) *float64 { return &c.AmbientRelevance }, 0, 1),
		duration("H4R_AMBIENT_DEBOUNCE", "30s", "Least time between two precedent pushes to one subscribe session.",
			func(c *Config) *time.Duration { return &c.AmbientDebounce }, 0, 24*time.Hour),
		whole("H4R_AMBIENT_MAX_PER_SESSION", "10", "Most WebSocket connections one subscribe session may hold; one more is closed (1008) with the reason.",
			func(c *Config) *int { return &c.AmbientMaxPerSession }, 1, 10_000),
		whole("H4R_AMBIENT_MAX_PER_KEY", "100", "Most WebSocket connections of GET /v1/subscribe one API key may hold; one more is closed (1008) with the reason.",
			func(c *Config) *int { return &c.AmbientMaxPerKey }, 1, 1_000_000),
		number("H4R_LOW_RELEVANCE_THRESHOLD", "0.3", "When no evidence item reaches this relevance, the pack suggests request_more_context (ask for more context or rephrase).",
			func(c *Config) *float64 { return &c.LowRelevanceThreshold }, 0, 1),

		oneOf("H4R_LOG_LEVEL", "info", "Least severe log level written: debug, info, warn or error.",
			func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error"),
		oneOf("H4R_LOG_FORMAT", "json", "Log format: json (one object a line) or text (key=value).",
			func(c *Config) *string { return &c.LogFormat }, "json", "text"),

		text("H4R_API_KEYS_FILE", "", "File of API keys (stored as SHA-256 hashes), each mapped to a principal: specialist id, type, securityLevel, authorizedGroups and allowed routes. Empty: no authentication, and the server listens on loopback only.",
			func(c *Config) *string { return &c.APIKeysFile }, nil),
		text("H4R_TENANTS_FILE", "", "JSON file of the tenants h4r serve serves besides the implicit default one, each with its own store namespace, policy, quotas and webhook secret (docs/tenants.md); h4r tenants create and delete edit it. Needs H4R_API_KEYS_FILE: a key's tenant field says whose data it reaches. Empty: one tenant, default.",
			func(c *Config) *string { return &c.TenantsFile }, nil),
		text("H4R_TENANT", "default", "Tenant the command-line commands (ingest, pack, query, mcp, reindex) act on: its store namespace and policy, as h4r serve derives them from H4R_TENANTS_FILE.",
			func(c *Config) *string { return &c.Tenant }, checkNotEmpty),
		text("H4R_MCP_API_KEY", "", "API key whose principal (clearance, groups, route classes) h4r mcp answers for over stdio; it must be in H4R_API_KEYS_FILE. Empty: the anonymous public specialist, allowed read and ingest tools. Over HTTP (/mcp) each request's own key decides.",
			func(c *Config) *string { return &c.MCPAPIKey }, nil),
		boolean("H4R_ANONYMOUS_AUDIT", "false", "Without API keys (loopback only), let callers see what policy hid from them: the ids, reasons and signals of denied items, as keys with the audit or admin class do. false: they see only counts.",
			func(c *Config) *bool { return &c.AnonymousAudit }),
		whole("H4R_RATE_LIMIT_PER_MINUTE", "60", "Requests per minute per API key and route class (read, ingest, admin; each class its own bucket, and /mcp and WebSocket messages each their own), unless the key sets rateLimitPerMinute; more are answered resource_exhausted with Retry-After. Each call of a JSON-RPC batch counts, and so does each message a client sends on GET /v1/subscribe (over the limit: an error frame; a client that goes on sending is closed, 1008).",
			func(c *Config) *int { return &c.RateLimitPerMinute }, 1, 1_000_000),
		duration("H4R_SHUTDOWN_GRACE", "10s", "On SIGTERM, how long in-flight requests may finish before the server closes.",
			func(c *Config) *time.Duration { return &c.ShutdownGrace }, 0, 10*time.Minute),

		oneOf("H4R_EMBEDDER", "learned", "Embedder for vector candidates: learned (built in, offline, term associations learned from the indexed texts, latent semantic analysis; learned at start over an existing corpus, on h4r reindex and when the corpus doubles), hash (built in, offline, feature hashing of words and character n-grams), openai (an OpenAI-compatible /v1/embeddings server: OpenAI, Ollama, vLLM, text-embeddings-inference) or none (no vectors: nothing is embedded, no vector index is kept, hybrid and semantic queries are answered by full-text search and say so).",
			func(c *Config) *string { return &c.Embedder }, "learned", "hash", "openai", "none"),
		serviceURL("H4R_EMBED_URL", "Base URL of the OpenAI-compatible embeddings server when H4R_EMBEDDER=openai, e.g. http://localhost:11434/v1.",
			func(c *Config) *string { return &c.EmbedURL }, "http", "https"),
		text("H4R_EMBED_MODEL", "", "Embedding model name when H4R_EMBEDDER=openai, e.g. text-embedding-3-small or nomic-embed-text.",
			func(c *Config) *string { return &c.EmbedModel }, nil),
		text("H4R_EMBED_API_KEY", "", "API key sent as a bearer token to the embeddings server (empty: none).",
			func(c *Config) *string { return &c.EmbedAPIKey }, nil),
		whole("H4R_EMBED_DIM", "512", "Dimension of the built-in hashing embedder's vectors.",
			func(c *Config) *int { return &c.EmbedDim }, 16, 8192),
		whole("H4R_EMBED_LEARNED_DIM", "128", "Dimension of the learned embedder's vectors (latent dimensions kept from the corpus), chosen by cross-validation across the public sets; a change takes effect when it learns again (h4r reindex).",
			func(c *Config) *int { return &c.EmbedLearnedDim }, 2, 1024),
		duration("H4R_EMBED_TIMEOUT", "500ms", "Deadline of one embedding call; a late or failed embedding degrades the request to full-text with a warning.",
			func(c *Config) *time.Duration { return &c.EmbedTimeout }, time.Millisecond, time.Minute),
		whole("H4R_EMBED_CACHE_SIZE", "10000", "Query embeddings kept in memory (LRU, keyed by model and normalised text); 0 turns the cache off.",
			func(c *Config) *int { return &c.EmbedCacheSize }, 0, 10_000_000),
		oneOf("H4R_FUSION", "relative", "How full-text and vector scores fuse into relevance: relative (min-max normalised, weighted) or rrf (reciprocal-rank fusion).",
			func(c *Config) *string { return &c.Fusion }, "relative", "rrf"),
		number("H4R_FUSION_VECTOR_WEIGHT", "0.3", "Share of the vector generator in fused relevance (full-text gets the rest), chosen with the learned embedder by cross-validation across the public sets.",
			func(c *Config) *float64 { return &c.FusionVector }, 0, 1),
		whole("H4R_VECTOR_CANDIDATES", "100", "Most candidates the vector generator adds to a query (the full-text generator adds up to 100), chosen with the learned embedder by cross-validation across the public sets; with the hashing embedder 20 did better (its far neighbours add noise).",
			func(c *Config) *int { return &c.VectorCandidates }, 1, 1000),
		whole("H4R_VECTOR_FEEDBACK_DOCS", "3", "Pseudo-relevance feedback on the vector side: the query vector moves toward the vectors of this many best items of the first pass (fused full-text and vector relevance; only items the caller may read) and the vector search runs again, adding no word to full-text search; 0 turns it off. With H4R_VECTOR_FEEDBACK_WEIGHT and H4R_VECTOR_FEEDBACK_MIN_SPREAD, chosen by leave-one-set-out cross-validation across the public sets (bench/RESULTS.md).",
			func(c *Config) *int { return &c.VectorFeedbackDocs }, 0, 50),
		number("H4R_VECTOR_FEEDBACK_WEIGHT", "0.3", "Share of the feedback items' mean vector in the moved query vector (the query keeps the rest), when H4R_VECTOR_FEEDBACK_DOCS is above 0.",
			func(c *Config) *float64 { return &c.VectorFeedbackWeight }, 0, 1),
		number("H4R_VECTOR_FEEDBACK_MIN_SPREAD", "0.1", "Feedback on the query vector runs only for a query whose full-text first pass has a clear top: the standard deviation of its best 10 scores (of items the caller may read) over the best one at least this; 0: every query. Without it, feedback lost on some public sets.",
			func(c *Config) *float64 { return &c.VectorFeedbackSpread }, 0, 1),
		boolean("H4R_CONVERSATION", "true", "Conversation-aware retrieval: a text hit that belongs to a session (metadata.session) scores at least its session's density (the share of the session that matches the question), the turns of the best sessions (reached by follows links) join the candidates, and a time the question names (yesterday, two weeks ago, last May; counted from the request's as_of) favours items made then. Candidates without a session and undated ones rank as without it.",
			func(c *Config) *bool { return &c.Conversation }),
		number("H4R_FUSION_SESSION_WEIGHT", "2", "Weight of the session evidence in fused relevance, beside full-text's (1 - H4R_FUSION_VECTOR_WEIGHT); applies only to packs whose candidates have a session (H4R_CONVERSATION).",
			func(c *Config) *float64 { return &c.FusionSession }, 0, 10),
		number("H4R_FUSION_TIME_WEIGHT", "4", "Weight of the time evidence in fused relevance, beside full-text's; applies only when the question names a time and candidates are dated (H4R_CONVERSATION).",
			func(c *Config) *float64 { return &c.FusionTime }, 0, 10),
		text("QDRANT_API_KEY", "", "API key of the Qdrant server (empty: none).",
			func(c *Config) *string { return &c.QdrantAPIKey }, nil),
		text("QDRANT_COLLECTION", "h4r_items", "Qdrant collection holding the item vectors.",
			func(c *Config) *string { return &c.QdrantCollection }, checkNotEmpty),

		text("NEO4J_USER", "neo4j", "Neo4j user (when NEO4J_URL is set).",
			func(c *Config) *string { return &c.Neo4jUser }, nil),
		text("NEO4J_PASSWORD", "", "Neo4j password (when NEO4J_URL is set).",
			func(c *Config) *string { return &c.Neo4jPassword }, nil),
		text("NEO4J_DATABASE", "", "Neo4j database (empty: the server's default database).",
			func(c *Config) *string { return &c.Neo4jDatabase }, nil),

		duration("SCS_OPA_TIMEOUT", "100ms", "Deadline of one call to a remote OPA (SCS_OPA_URL); a late answer counts as OPA unreachable.",
			func(c *Config) *time.Duration { return &c.OPATimeout }, time.Millisecond, time.Minute),
		boolean("SCS_POLICY_WATCH", "true", "Watch SCS_POLICY_DIR (or the bundle file) and swap in a new policy when it changes; a policy that does not compile is refused and the old one stays.",
			func(c *Config) *bool { return &c.PolicyWatch }),
		boolean("SCS_POLICY_NETWORK", "false", "Let embedded policies call the built-ins that reach the network or the process environment (http.send, net.lookup_ip_addr, opa.runtime); false: a policy that calls one does not load.",
			func(c *Config) *bool { return &c.PolicyNet }),
		text("SCS_DECISION_LOG", "", "Where every drop or redact decision is logged as JSON lines (never the redacted values): a file path, stdout, or empty for no decision log.",
			func(c *Config) *string { return &c.DecisionLog }, nil),

		serviceURL("NATS_URL", "NATS server of the commit-trace consumer (JetStream on), e.g. nats://127.0.0.1:4222; empty: no consumer (h4r serve logs that it skipped it; POST /v1/traces still ingests).",
			func(c *Config) *string { return &c.NATSURL }, "nats", "tls"),
		text("NATS_CREDS", "", "NATS credentials file (.creds: JWT and NKey seed) for NATS_URL; empty: none.",
			func(c *Config) *string { return &c.NATSCreds }, nil),
		text("H4R_TRACE_SUBJECT", "buckley.trace.commit", "NATS subject commit traces are published on; the durable consumer reads it.",
			func(c *Config) *string { return &c.TraceSubject }, checkSubject),
		text("H4R_LANDED_SUBJECT", "buckley.event.landed", "NATS subject an event is published on after a GitHub webhook changes a trace's status.",
			func(c *Config) *string { return &c.LandedSubject }, checkSubject),
		text("H4R_TRACE_STREAM", "H4R_TRACES", "JetStream stream of H4R_TRACE_SUBJECT; created when missing.",
			func(c *Config) *string { return &c.TraceStream }, checkNotEmpty),
		text("H4R_TRACE_DURABLE", "h4r-traces", "Durable consumer name, shared by every replica so that each trace is handled by one.",
			func(c *Config) *string { return &c.TraceDurable }, checkNotEmpty),
		text("H4R_TRACE_DEAD_LETTER_SUBJECT", "buckley.trace.dead_letter", "NATS subject a commit trace that cannot be stored is published on, as received, with its reason, field and error in H4R-Dead-Letter-* headers, for an operator to replay; the stream H4R creates stores it too. Empty: such messages are only logged and counted.",
			func(c *Config) *string { return &c.TraceDeadLetter }, checkOptionalSubject),
		text("H4R_TRACE_DECISION_SUBJECT", "", "NATS subject each decision of every stored trace is published on (one JSON decision a message), e.g. buckley.trace.decision; empty: no fan-out.",
			func(c *Config) *string { return &c.DecisionSubject }, checkOptionalSubject),
		text("H4R_LANDING_BRANCHES", "", "Comma-separated branches whose pull request merges and pushes land traces, besides each repository's default branch (from the webhook payload), e.g. release/2.x; empty: the default branch only.",
			func(c *Config) *string { return &c.LandingBranches }, checkBranches),
		text("H4R_GITHUB_WEBHOOK_SECRET", "", "Secret of the GitHub webhook (POST /webhook/github verifies X-Hub-Signature-256 with it); empty: every delivery is refused.",
			func(c *Config) *string { return &c.GitHubWebhookSecret }, nil),
		serviceURL("H4R_SUMMARY_URL", "Base URL of an OpenAI-compatible chat server that summarizes traces published without a summary, e.g. http://localhost:11434/v1; empty: the built-in summary from areas, decisions and line counts.",
			func(c *Config) *string { return &c.SummaryURL }, "http", "https"),
		text("H4R_SUMMARY_MODEL", "", "Chat model of H4R_SUMMARY_URL, e.g. gpt-4o-mini or llama3.2.",
			func(c *Config) *string { return &c.SummaryModel }, nil),
		text("H4R_SUMMARY_API_KEY", "", "API key sent as a bearer token to H4R_SUMMARY_URL (empty: none).",
			func(c *Config) *string { return &c.SummaryAPIKey }, nil),
		duration("H4R_SUMMARY_TIMEOUT", "5s", "Deadline of one summary call; a late or failed summary falls back to the built-in one, never failing the ingest.",
			func(c *Config) *time.Duration { return &c.SummaryTimeout }, time.Millisecond, 10*time.Minute),
		serviceURL("OTEL_EXPORTER_OTLP_ENDPOINT", "OpenTelemetry collector that spans (NATS message, ingest, store, search) are exported to over OTLP/HTTP, e.g. http://localhost:4318; empty: no export.",
			func(c *Config) *string { return &c.OTLPEndpoint }, "http", "https"),
		text("H4R_A2A_PUBLIC_URL", "", "Base URL clients reach this server at (http or https, optional path prefix, e.g. https://h4r.example.com); the A2A agent card advertises its JSON-RPC endpoint under it. Empty: the address the connection came in on. Request headers (Host, X-Forwarded-*) never choose it.",
			func(c *Config) *string { return &c.A2APublicURL }, checkPublicURL),
		duration("H4R_A2A_TASK_TTL", "1h", "How long an A2A task (its pack) may be read with GetTask or tasks/get after it was made; then it is not found.",
			func(c *Config) *time.Duration { return &c.A2ATaskTTL }, time.Second, 7*24*time.Hour),
		whole("H4R_A2A_TASK_MAX", "1000", "Most A2A tasks kept in memory; past it the oldest are dropped.",
			func(c *Config) *int { return &c.A2ATaskMax }, 1, 1_000_000),
		whole("H4R_A2A_TASK_MAX_BYTES", "67108864", "Most bytes of A2A tasks (packs and messages) kept in memory, counted as their JSON encoding (held decoded, they take about 1.5 times that); past it the oldest are dropped.",
			func(c *Config) *int64 { return &c.A2ATaskMaxBytes }, 1<<20, 1<<40),
		whole("H4R_PACK_RETENTION", "10000", "How many packs POST /query keeps (the newest) so that POST /feedback can name them; older ones are pruned as new ones are stored, and feedback on them answers 404. 0 keeps every pack.",
			func(c *Config) *int { return &c.PackRetention }, 0, math.MaxInt),
		boolean("H4R_BRIDGE_ENABLED", "false", "Feature flag of the context bridge (POST /v1/bridge): when false the bridge returns the tool result unchanged, without context_bridge.",
			func(c *Config) *bool { return &c.BridgeEnabled }),
		text("H4R_BRIDGE_TOOLS", "think,make-decision,decompose-problem,analyze-perspectives,build-causal-graph", "Comma-separated tool names the context bridge enriches (its allow-list); calls of other tools are returned unchanged.",
			func(c *Config) *string { return &c.BridgeTools }, checkNotEmpty),
		number("H4R_BRIDGE_MIN_SIMILARITY", "0.6", "Least similarity of a past trajectory to be a context-bridge match (0.6: the lower end of the same-domain range of docs/bridge.md).",
			func(c *Config) *float64 { return &c.BridgeMinSimilarity }, 0, 1),
		whole("H4R_BRIDGE_MAX_MATCHES", "3", "Most matches the context bridge returns.",
			func(c *Config) *int { return &c.BridgeMaxMatches }, 1, 100),
		whole("H4R_BRIDGE_CACHE_SIZE", "100", "Entries of the context bridge's LRU cache of matches, keyed by signature fingerprint, the caller's identity and clearance, and the policy revision; an entry is used only while no trajectory was written or deleted since it was read, and its matches are checked against their stored versions before each answer.",
			func(c *Config) *int { return &c.BridgeCacheSize }, 1, 1_000_000),
		duration("H4R_BRIDGE_TIMEOUT", "2s", "Deadline of one context-bridge enrichment; past it the answer is context_bridge.status degraded, reason timeout.",
			func(c *Config) *time.Duration { return &c.BridgeTimeout }, time.Millisecond, time.Minute),
		duration("H4R_BRIDGE_EMBED_TIMEOUT", "500ms", "Deadline of the context bridge's embedding step (with H4R_EMBEDDER=openai); past it, or on any embedding error, matching is concept-only and says so.",
			func(c *Config) *time.Duration { return &c.BridgeEmbedTimeout }, time.Millisecond, time.Minute),
		duration("H4R_BRIDGE_INDEX_REFRESH", "1m", "How often the context bridge reloads its in-memory signature index of trajectories from an embedded (SQLite) store to catch writes by other processes sharing the file. This process's own writes are indexed at once; on Postgres the index follows every replica's writes through the store's log of item changes (read when the store notifies a change, and at least every 250 ms) and is not reloaded. Either way each answer is checked against the stored versions of its matches before it is served.",
			func(c *Config) *time.Duration { return &c.BridgeIndexRefresh }, time.Second, 24*time.Hour),
		whole("H4R_BRIDGE_ROLLOUT_PERCENT", "100", "Share of sessions the context bridge enriches when H4R_BRIDGE_ENABLED is true, for a gradual rollout (10, then 50, then 100): a call is in when a hash of its params.session_id (else of the caller's identity) falls below the percentage, so a session is always in or always out. 0 enriches nothing.",
			func(c *Config) *int { return &c.BridgeRolloutPercent }, 0, 100),
		serviceURL("H4R_MCP_UPSTREAM_URL", "Streamable HTTP endpoint of another MCP server whose tools H4R re-exposes, on /mcp and h4r mcp, under H4R_MCP_UPSTREAM_PREFIX, forwarding each call and enriching allow-listed tools' results with the context bridge. Empty: none (or H4R_MCP_UPSTREAM_COMMAND).",
			func(c *Config) *string { return &c.MCPUpstreamURL }, "http", "https"),
		text("H4R_MCP_UPSTREAM_COMMAND", "", "Command (split on spaces, no shell) that starts another MCP server over stdio, as H4R_MCP_UPSTREAM_URL but a local process; ignored when the URL is set.",
			func(c *Config) *string { return &c.MCPUpstreamCommand }, nil),
		text("H4R_MCP_UPSTREAM_PREFIX", "upstream_", "Put before the upstream MCP server's tool names, so that they cannot take the names of H4R's own tools.",
			func(c *Config) *string { return &c.MCPUpstreamPrefix }, nil),
		text("H4R_INGEST_ROOTS", "", "Comma-separated folders that POST /ingest may read local sources (git, fs, doc) from; a path outside them, or a symlink leaving them, is refused. Empty: no local source is allowed over HTTP (h4r ingest-source reads the path it is given).",
			func(c *Config) *string { return &c.IngestRoots }, nil),
		whole("H4R_INGEST_MAX_FILE_BYTES", "1048576", "Largest file (or page) ingested, in bytes; a larger one is skipped and reported.",
			func(c *Config) *int64 { return &c.IngestMaxFileBytes }, 1, 1<<40),
		text("H4R_INGEST_CREDENTIAL_PATTERNS", ".env,.env.*,*.pem,*.key,*.p12,*.pfx,id_rsa,id_dsa,id_ecdsa,id_ed25519,.netrc,.npmrc,.pgpass,credentials.json,*.keystore", "Comma-separated file name patterns (shell globs on the base name or the path, matched case-insensitively) of files that hold credentials, in addition to the built-in names (.env and its variants, cloud and git credentials, kubeconfig, Terraform state, private keys, …). Every changed file is also scanned by content with the gitleaks rule set.",
			func(c *Config) *string { return &c.IngestCredentialPatterns }, nil),
		oneOf("H4R_INGEST_CREDENTIALS", "flag", "What ingestion does with a file holding credentials (by name, built-in or H4R_INGEST_CREDENTIAL_PATTERNS, or by its content): flag (ingest it with metadata.hasCredentials, which policy withholds from every caller) or skip (leave it out, reported).",
			func(c *Config) *string { return &c.IngestCredentials }, "flag", "skip"),
		boolean("H4R_INGEST_ALLOW_PRIVATE_URLS", "false", "Let url sources fetch pages, and git sources clone, from private, loopback and link-local addresses (checked at connection time).",
			func(c *Config) *bool { return &c.IngestAllowPrivateURLs }),
		whole("H4R_CHUNK_MAX_TOKENS", "400", "Token budget of one ingested chunk's raw text (H4R_TOKEN_ENCODING).",
			func(c *Config) *int { return &c.ChunkMaxTokens }, 16, 8000),
		whole("H4R_CHUNK_OVERLAP_TOKENS", "50", "Tokens of a text chunk's end that the next text chunk repeats (whole lines; at most half the chunk budget).",
			func(c *Config) *int { return &c.ChunkOverlapTokens }, 0, 4000),
	})
}

// marked sets Secret and Essential on the rows those lists name.
func marked(rows []variable) []variable {
	// secretVars hold credentials: h4r config never prints them.
	secretVars := []string{"H4R_MCP_API_KEY", "H4R_EMBED_API_KEY", "QDRANT_API_KEY", "NEO4J_PASSWORD",
		"H4R_GITHUB_WEBHOOK_SECRET", "H4R_SUMMARY_API_KEY"}

	// essentialVars are the settings a new deployment looks at first; the
	// configuration reference lists them apart from the tuning knobs.
	essentialVars := []string{"H4R_CONFIG", "H4R_ADDR", "H4R_DATA_DIR", "DATABASE_URL", "NATS_URL", "QDRANT_URL",
		"NEO4J_URL", "H4R_API_KEYS_FILE", "SCS_POLICY_DIR", "SCS_OPA_URL", "SCS_MAX_TOKENS_DEFAULT",
		"SCS_MAX_BYTES_DEFAULT", "H4R_REQUEST_TIMEOUT", "H4R_EMBEDDER", "H4R_EMBED_URL", "H4R_EMBED_MODEL",
		"H4R_GITHUB_WEBHOOK_SECRET", "H4R_BRIDGE_ENABLED", "H4R_LOG_LEVEL", "H4R_RATE_LIMIT_PER_MINUTE"}
	for i := range rows {
		rows[i].Secret = slices.Contains(secretVars, rows[i].Name)
		rows[i].Essential = slices.Contains(essentialVars, rows[i].Name)
	}
	return rows
}

// invalid is the error of every bad value: the variable, what it wants, and
// what it got.
func invalid(name, want, got string) error {
	return h4r.Errorf(h4r.EINVALID, name, "want %s, got %q", want, got)
}

// number is a float variable in [lo, hi]; NaN and infinities are rejected.
func number(name, def, desc string, field func(*Config) *float64, lo, hi float64) variable {
	want := "a number >= " + fmtFloat(lo)
	if !math.IsInf(hi, 1) {
		want = "a number in [" + fmtFloat(lo) + ", " + fmtFloat(hi) + "]"
	}
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= lo && x <= hi }
	return variable{
		Var: Var{Name: name, Default: def, Description: desc},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || !ok(x) {
				return invalid(name, want, s)
			}
			*field(c) = x
			return nil
		},
		check: func(c Config) error {
			if x := *field(&c); !ok(x) {
				return invalid(name, want, fmtFloat(x))
			}
			return nil
		},
	}
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// whole is an integer variable in [lo, hi], written in decimal.
func whole[T int | int64](name, def, desc string, field func(*Config) *T, lo, hi T) variable {
	want := fmt.Sprintf("a whole number >= %d", lo)
	if int64(hi) < int64(math.MaxInt) { // MaxInt stands for "no upper bound"
		want = fmt.Sprintf("a whole number from %d to %d", lo, hi)
	}
	return variable{
		Var: Var{Name: name, Default: def, Description: desc},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil || x < int64(lo) || x > int64(hi) {
				return invalid(name, want, s)
			}
			*field(c) = T(x)
			return nil
		},
		check: func(c Config) error {
			if x := *field(&c); x < lo || x > hi {
				return invalid(name, want, strconv.FormatInt(int64(x), 10))
			}
			return nil
		},
	}
}

// duration is a duration variable in [lo, hi], written as a Go duration
// ("1500ms", "5s", "2m"). Its old name with _MS, written as whole
// milliseconds, is kept as an alias, so that configurations written for
// it keep working.
func duration(name, def, desc string, field func(*Config) *time.Duration, lo, hi time.Duration) variable {
	want := fmt.Sprintf("a duration such as 500ms, 5s or 2m, from %s to %s", fmtDuration(lo), fmtDuration(hi))
	alias := name + "_MS"
	wantMS := fmt.Sprintf("a whole number of milliseconds from %d to %d", lo.Milliseconds(), hi.Milliseconds())
	return variable{
		Var: Var{Name: name, Default: def, Description: desc, Aliases: []string{alias}},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			d, err := time.ParseDuration(s)
			if err != nil || d < lo || d > hi {
				if _, numErr := strconv.ParseInt(s, 10, 64); numErr == nil && s != "0" {
					return invalid(name, want+" (a number needs a unit; "+alias+" takes milliseconds)", s)
				}
				return invalid(name, want, s)
			}
			*field(c) = d
			return nil
		},
		parseAlias: func(c *Config, s string) error {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil || ms < lo.Milliseconds() || ms > hi.Milliseconds() {
				return invalid(alias, wantMS, s)
			}
			*field(c) = time.Duration(ms) * time.Millisecond
			return nil
		},
		check: func(c Config) error {
			if d := *field(&c); d < lo || d > hi {
				return invalid(name, want, fmtDuration(d))
			}
			return nil
		},
	}
}

// boolean is a true/false variable; it accepts what strconv.ParseBool does
// (true, false, 1, 0, TRUE, …).
func boolean(name, def, desc string, field func(*Config) *bool) variable {
	return variable{
		Var: Var{Name: name, Default: def, Description: desc},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return invalid(name, "true or false", s)
			}
			*field(c) = b
			return nil
		},
		check: func(Config) error { return nil },
	}
}

// text is a free-form string variable. problem, when not nil, returns what
// is wrong with a value ("" when nothing is).
func text(name, def, desc string, field func(*Config) *string, problem func(string) string) variable {
	check := func(s string) error {
		if problem == nil {
			return nil
		}
		if p := problem(s); p != "" {
			return h4r.Errorf(h4r.EINVALID, name, "%s", p)
		}
		return nil
	}
	return variable{
		Var: Var{Name: name, Default: def, Description: desc},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			if err := check(s); err != nil {
				return err
			}
			*field(c) = s
			return nil
		},
		check: func(c Config) error { return check(*field(&c)) },
	}
}

// oneOf is a variable taking one of a few words, case-insensitively; the
// Config holds the lower-case form.
func oneOf(name, def, desc string, field func(*Config) *string, allowed ...string) variable {
	want := "one of " + strings.Join(allowed, ", ")
	return variable{
		Var: Var{Name: name, Default: def, Description: desc},
		get: func(c Config) any { return *field(&c) },
		parse: func(c *Config, s string) error {
			lower := strings.ToLower(s)
			if !slices.Contains(allowed, lower) {
				return invalid(name, want, s)
			}
			*field(c) = lower
			return nil
		},
		check: func(c Config) error {
			if s := *field(&c); !slices.Contains(allowed, s) {
				return invalid(name, want, s)
			}
			return nil
		},
	}
}

// serviceURL is an optional URL of an external service (empty means the
// embedded default) whose scheme is one of schemes. Its errors never quote
// the value: a database URL usually holds a password, and these errors end
// up in logs.
func serviceURL(name, desc string, field func(*Config) *string, schemes ...string) variable {
	return text(name, "", desc, field, func(s string) string {
		if s == "" {
			return ""
		}
		u, err := url.Parse(s)
		if err != nil {
			return "want a URL such as " + schemes[0] + "://host:port, got a value that does not parse as a URL (not shown: it may hold a password)"
		}
		if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
			return fmt.Sprintf("want a URL with scheme %s, got scheme %q", strings.Join(schemes, ", "), u.Scheme)
		}
		if u.Host == "" {
			return "want a URL with a host, such as " + schemes[0] + "://host:port, got none"
		}
		return ""
	})
}

// checkSubject accepts a NATS subject: dot-separated tokens without
// spaces or wildcards.
func checkSubject(s string) string {
	if s == "" {
		return "want a NATS subject such as buckley.trace.commit, got none"
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n*>") {
			return fmt.Sprintf("want a NATS subject of dot-separated tokens without spaces or wildcards, got %q", s)
		}
	}
	return ""
}

// checkOptionalSubject accepts a NATS subject or nothing.
func checkOptionalSubject(s string) string {
	if s == "" {
		return ""
	}
	return checkSubject(s)
}

// Branches returns the branch names of an H4R_LANDING_BRANCHES value.
func Branches(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// checkBranches accepts comma-separated git branch names.
func checkBranches(s string) string {
	for _, b := range strings.Split(s, ",") {
		b = strings.TrimSpace(b)
		if strings.ContainsFunc(b, unicode.IsSpace) || strings.ContainsAny(b, "~^:?*[\\") || strings.HasPrefix(b, "refs/") {
			return fmt.Sprintf("want branch names such as main,release/2.x (without refs/heads/), got %q", b)
		}
	}
	return ""
}

// checkAddr accepts host:port with a numeric port (host may be empty, to
// listen on every interface).
func checkAddr(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr == nil && n >= 0 && n <= 65535 {
			return ""
		}
	}
	return fmt.Sprintf("want host:port such as 127.0.0.1:8080 or :8080, got %q", s)
}

// checkDebugAddr accepts an empty H4R_DEBUG_ADDR (no listener) or a
// loopback host:port: the profiles answer anyone who reaches them.
func checkDebugAddr(s string) string {
	if s == "" {
		return ""
	}
	if p := checkAddr(s); p != "" {
		return p
	}
	host, _, _ := net.SplitHostPort(s)
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("the profiles have no authentication, so they are served on a loopback address only: want 127.0.0.1:PORT, [::1]:PORT or localhost:PORT, got %q", s)
	}
	return ""
}

// DefaultCausalLinkTypes are the link types of the item model and of the traces
// that say why an item exists or what it rests on: cause (caused_by,
// causes, fixes, corrects, introduced_in, outcome_of), dependence
// (depends_on, derived_from, references: a chunk's Go import or Markdown
// link) and precedent (cites, cites_precedent, applies_pattern,
// resolves_conflict_from, learned_from).
const DefaultCausalLinkTypes = "caused_by,causes,fixes,corrects,introduced_in,outcome_of,depends_on,derived_from,references,cites,cites_precedent,applies_pattern,resolves_conflict_from,learned_from"

// AllLinkTypes is the H4R_CAUSAL_LINK_TYPES value that follows every link.
const AllLinkTypes = "all"

// LinkTypes returns the link types an H4R_CAUSAL_LINK_TYPES value names;
// nil for all (every type is followed).
func LinkTypes(s string) []string {
	if strings.EqualFold(strings.TrimSpace(s), AllLinkTypes) {
		return nil
	}
	var types []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

// checkLinkTypes accepts all or a comma-separated list of link type names.
func checkLinkTypes(s string) string {
	if strings.EqualFold(strings.TrimSpace(s), AllLinkTypes) {
		return ""
	}
	for i, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			return fmt.Sprintf("want all or comma-separated link types such as caused_by,fixes, got an empty type at position %d in %q", i+1, s)
		}
		if strings.ContainsFunc(t, unicode.IsSpace) || len(t) > 200 {
			return fmt.Sprintf("want link types without spaces, got %q", t)
		}
	}
	return ""
}

func checkStopWords(s string) string {
	if strings.TrimSpace(s) == "" {
		return "want english, none or the path of a stop word file, got an empty value"
	}
	return ""
}

func checkNotEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "want a directory, got an empty value"
	}
	return ""
}

// checkPublicURL accepts an empty value or an absolute http(s) URL with a
// host and no user, query or fragment.
func checkPublicURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("want an http or https URL such as https://h4r.example.com, got %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("want an http or https URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return fmt.Sprintf("want a URL with a host, got %q", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Sprintf("want a base URL without user, query or fragment, got %q", s)
	}
	return ""
}
