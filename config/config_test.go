package config_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/config"
)

var update = flag.Bool("update", false, "rewrite .env.example and the table of docs/configuration.md from config.Vars()")

// env returns a lookup over the given variables, like os.LookupEnv over an
// environment holding only them.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// problems returns every *h4r.Error in err's tree, in order.
func problems(err error) []*h4r.Error {
	var out []*h4r.Error
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*h4r.Error); ok {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

func TestDefault(t *testing.T) {
	c := config.Default()
	// The documented defaults (docs/configuration.md).
	want := config.Config{
		Addr:                     "127.0.0.1:8080",
		DataDir:                  "./data",
		Weights:                  h4r.Weights{0.475, 0.05, 0.05, 0.05, 0.2, 0.05, 0.075, 0.05},
		RecencyDecayLambda:       0.1,
		MaxHops:                  3,
		MaxBytesDefault:          122880,
		MaxTokensDefault:         30000,
		MaxItemsDefault:          100,
		OPAFallbackLocal:         false,
		OPACacheTTL:              5 * time.Second,
		TLDRSentences:            5,
		IncludeGraph:             false,
		PGMaxReadConns:           8,
		PGMaxWriteConns:          4,
		WriteTimeout:             5 * time.Second,
		ItemCacheMB:              256,
		SQLiteSync:               "full",
		VectorANNThreshold:       0,
		TokenEncoding:            "cl100k_base",
		RequestTimeout:           2 * time.Second,
		GeneratorTimeout:         time.Second,
		AmbientRelevance:         0.75,
		AmbientDebounce:          30 * time.Second,
		AmbientMaxPerSession:     10,
		AmbientMaxPerKey:         100,
		MaxBodyBytes:             4 << 20,
		MaxConnections:           512,
		MaxConnectionsPerAddr:    128,
		MCPMaxBatch:              20,
		UnauthenticatedBodyBytes: 64 << 20,
		GCHeadroomMB:             128,
		LowRelevanceThreshold:    0.3,
		LogLevel:                 "info",
		LogFormat:                "json",
		RateLimitPerMinute:       60,
		ShutdownGrace:            10 * time.Second,
		A2ATaskTTL:               time.Hour,
		A2ATaskMax:               1000,
		A2ATaskMaxBytes:          64 << 20,
		Embedder:                 "learned",
		EmbedDim:                 512,
		EmbedLearnedDim:          128,
		VectorCandidates:         100,
		VectorFeedbackDocs:       3,
		VectorFeedbackWeight:     0.3,
		VectorFeedbackSpread:     0.1,
		EmbedTimeout:             500 * time.Millisecond,
		EmbedCacheSize:           10000,
		Fusion:                   "relative",
		AccessCounting:           "use",
		StopWords:                "english",
		OPACompiledPredicates:    256,
		FusionVector:             0.3,
		Conversation:             true,
		FusionSession:            2,
		FusionTime:               4,
		QdrantCollection:         "h4r_items",
		Neo4jUser:                "neo4j",
		OPATimeout:               100 * time.Millisecond,
		PolicyWatch:              true,
		TraceSubject:             "buckley.trace.commit",
		LandedSubject:            "buckley.event.landed",
		TraceStream:              "H4R_TRACES",
		TraceDurable:             "h4r-traces",
		TraceDeadLetter:          "buckley.trace.dead_letter",
		SummaryTimeout:           5 * time.Second,
		PackRetention:            10000,
		CausalLinkTypes:          "caused_by,causes,fixes,corrects,introduced_in,outcome_of,depends_on,derived_from,references,cites,cites_precedent,applies_pattern,resolves_conflict_from,learned_from",
		BridgeTools:              "think,make-decision,decompose-problem,analyze-perspectives,build-causal-graph",
		BridgeMinSimilarity:      0.6,
		BridgeMaxMatches:         3,
		BridgeCacheSize:          100,
		BridgeTimeout:            2 * time.Second,
		BridgeEmbedTimeout:       500 * time.Millisecond,
		BridgeIndexRefresh:       time.Minute,
		BridgeRolloutPercent:     100,
		MCPUpstreamPrefix:        "upstream_",
		Tenant:                   "default",

		IngestMaxFileBytes:       1 << 20,
		IngestCredentialPatterns: ".env,.env.*,*.pem,*.key,*.p12,*.pfx,id_rsa,id_dsa,id_ecdsa,id_ed25519,.netrc,.npmrc,.pgpass,credentials.json,*.keystore",
		IngestCredentials:        "flag",
		ChunkMaxTokens:           400,
		ChunkOverlapTokens:       50,
		ExpansionDocs:            5,
		ExpansionTerms:           10,
		ExpansionWeight:          0.7,
	}
	if c != want {
		t.Errorf("Default() =\n%+v\nwant\n%+v", c, want)
	}
	x := analysis.DefaultExpansion()
	if got := (analysis.Expansion{Docs: c.ExpansionDocs, Terms: c.ExpansionTerms, OriginalWeight: c.ExpansionWeight, FirstPass: c.ExpansionFirstPass, Contrast: c.ExpansionContrast}); got != x {
		t.Errorf("the H4R_EXPANSION_* defaults are %+v, want analysis.DefaultExpansion() %+v", got, x)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v, want nil", err)
	}
	if _, scaled := c.Weights.Normalized(); scaled {
		t.Errorf("default weights sum to %v, want 1 so that no request gets a normalisation warning", c.Weights.Sum())
	}
}

// The variable names are a public interface (deployments set them), so the
// list is spelled out here: renaming or dropping one must fail a test.
func TestVarsNamesAndOrder(t *testing.T) {
	want := []string{
		"H4R_CONFIG", "H4R_ADDR", "H4R_DATA_DIR",
		"H4R_WEIGHT_RELEVANCE", "H4R_WEIGHT_RECENCY", "H4R_WEIGHT_FREQUENCY", "H4R_WEIGHT_IMPORTANCE",
		"H4R_WEIGHT_CAUSALITY", "H4R_WEIGHT_NOVELTY", "H4R_WEIGHT_TRUST", "H4R_WEIGHT_SENSITIVITY",
		"H4R_WEIGHTS_FILE", "H4R_RECENCY_DECAY_LAMBDA", "H4R_ACCESS_COUNTING", "H4R_STOP_WORDS",
		"H4R_QUERY_EXPANSION", "H4R_EXPANSION_DOCS", "H4R_EXPANSION_TERMS", "H4R_EXPANSION_ORIGINAL_WEIGHT",
		"H4R_EXPANSION_FIRST_PASS_WEIGHT", "H4R_EXPANSION_CONTRAST",
		"H4R_MAX_HOPS", "H4R_CAUSAL_LINK_TYPES",
		"DATABASE_URL", "QDRANT_URL", "NEO4J_URL",
		"H4R_PG_MAX_READ_CONNS", "H4R_PG_MAX_WRITE_CONNS", "H4R_WRITE_TIMEOUT", "H4R_VECTOR_ANN_THRESHOLD", "H4R_ITEM_CACHE_MB", "H4R_SQLITE_SYNC",
		"SCS_MAX_BYTES_DEFAULT", "SCS_MAX_TOKENS_DEFAULT", "SCS_MAX_ITEMS_DEFAULT",
		"SCS_POLICY_DIR", "SCS_OPA_URL", "SCS_OPA_FALLBACK_LOCAL", "SCS_OPA_COMPILED_PREDICATES", "SCS_OPA_CACHE_TTL",
		"CONTEXT_PACK_TLDR_SENTENCES", "CONTEXT_PACK_INCLUDE_GRAPH",
		"H4R_TOKEN_ENCODING", "H4R_REQUEST_TIMEOUT", "H4R_GENERATOR_TIMEOUT",
		"H4R_MAX_BODY_BYTES", "H4R_MAX_CONNECTIONS", "H4R_MAX_CONNECTIONS_PER_ADDR", "H4R_UNAUTHENTICATED_BODY_BYTES", "H4R_MCP_MAX_BATCH", "H4R_GC_HEADROOM_MB", "H4R_DEBUG_ADDR",
		"H4R_AMBIENT_RELEVANCE", "H4R_AMBIENT_DEBOUNCE", "H4R_AMBIENT_MAX_PER_SESSION", "H4R_AMBIENT_MAX_PER_KEY", "H4R_LOW_RELEVANCE_THRESHOLD", "H4R_LOG_LEVEL", "H4R_LOG_FORMAT",
		"H4R_API_KEYS_FILE", "H4R_TENANTS_FILE", "H4R_TENANT", "H4R_MCP_API_KEY", "H4R_ANONYMOUS_AUDIT", "H4R_RATE_LIMIT_PER_MINUTE", "H4R_SHUTDOWN_GRACE",
		"H4R_EMBEDDER", "H4R_EMBED_URL", "H4R_EMBED_MODEL", "H4R_EMBED_API_KEY", "H4R_EMBED_DIM", "H4R_EMBED_LEARNED_DIM",
		"H4R_EMBED_TIMEOUT", "H4R_EMBED_CACHE_SIZE", "H4R_FUSION", "H4R_FUSION_VECTOR_WEIGHT", "H4R_VECTOR_CANDIDATES",
		"H4R_VECTOR_FEEDBACK_DOCS", "H4R_VECTOR_FEEDBACK_WEIGHT", "H4R_VECTOR_FEEDBACK_MIN_SPREAD",
		"H4R_CONVERSATION", "H4R_FUSION_SESSION_WEIGHT", "H4R_FUSION_TIME_WEIGHT",
		"QDRANT_API_KEY", "QDRANT_COLLECTION",
		"NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE",
		"SCS_OPA_TIMEOUT", "SCS_POLICY_WATCH", "SCS_POLICY_NETWORK", "SCS_DECISION_LOG",
		"NATS_URL", "NATS_CREDS", "H4R_TRACE_SUBJECT", "H4R_LANDED_SUBJECT", "H4R_TRACE_STREAM", "H4R_TRACE_DURABLE",
		"H4R_TRACE_DEAD_LETTER_SUBJECT", "H4R_TRACE_DECISION_SUBJECT", "H4R_LANDING_BRANCHES",
		"H4R_GITHUB_WEBHOOK_SECRET", "H4R_SUMMARY_URL", "H4R_SUMMARY_MODEL", "H4R_SUMMARY_API_KEY", "H4R_SUMMARY_TIMEOUT",
		"OTEL_EXPORTER_OTLP_ENDPOINT",
		"H4R_A2A_PUBLIC_URL", "H4R_A2A_TASK_TTL", "H4R_A2A_TASK_MAX", "H4R_A2A_TASK_MAX_BYTES",
		"H4R_PACK_RETENTION",
		"H4R_BRIDGE_ENABLED", "H4R_BRIDGE_TOOLS", "H4R_BRIDGE_MIN_SIMILARITY", "H4R_BRIDGE_MAX_MATCHES",
		"H4R_BRIDGE_CACHE_SIZE", "H4R_BRIDGE_TIMEOUT", "H4R_BRIDGE_EMBED_TIMEOUT", "H4R_BRIDGE_INDEX_REFRESH",
		"H4R_BRIDGE_ROLLOUT_PERCENT", "H4R_MCP_UPSTREAM_URL", "H4R_MCP_UPSTREAM_COMMAND", "H4R_MCP_UPSTREAM_PREFIX",
		"H4R_INGEST_ROOTS", "H4R_INGEST_MAX_FILE_BYTES", "H4R_INGEST_CREDENTIAL_PATTERNS", "H4R_INGEST_CREDENTIALS",
		"H4R_INGEST_ALLOW_PRIVATE_URLS", "H4R_CHUNK_MAX_TOKENS", "H4R_CHUNK_OVERLAP_TOKENS",
	}
	vars := config.Vars()
	if len(vars) != len(want) {
		t.Fatalf("Vars() has %d variables, want %d", len(vars), len(want))
	}
	for i, v := range vars {
		if v.Name != want[i] {
			t.Errorf("Vars()[%d].Name = %q, want %q", i, v.Name, want[i])
		}
		if strings.TrimSpace(v.Description) == "" {
			t.Errorf("%s has no description", v.Name)
		}
	}
	for _, v := range vars[3:11] {
		if !strings.Contains(v.Description, "h4r bench tune") {
			t.Errorf("%s description does not say where the default comes from: %q", v.Name, v.Description)
		}
	}
	// Vars builds a new slice on each call: a caller cannot change the table.
	vars[0].Default = "changed"
	if got := config.Vars()[0].Default; got == "changed" {
		t.Error("changing the slice Vars returned changed the next call's result")
	}
}

func TestFromEnvParsesEachVariable(t *testing.T) {
	tests := []struct {
		name  string // variable
		value string
		want  func(*config.Config) // the change from Default the value makes
	}{
		{"H4R_CONFIG", emptyConfigFile, func(c *config.Config) { c.ConfigFile = emptyConfigFile }},
		{"H4R_ADDR", "0.0.0.0:9090", func(c *config.Config) { c.Addr = "0.0.0.0:9090" }},
		{"H4R_DATA_DIR", "/var/lib/h4r", func(c *config.Config) { c.DataDir = "/var/lib/h4r" }},
		{"H4R_WEIGHT_RELEVANCE", "0.5", func(c *config.Config) { c.Weights[h4r.Relevance] = 0.5 }},
		{"H4R_WEIGHT_RECENCY", "0.25", func(c *config.Config) { c.Weights[h4r.Recency] = 0.25 }},
		{"H4R_WEIGHT_FREQUENCY", "0", func(c *config.Config) { c.Weights[h4r.Frequency] = 0 }},
		{"H4R_WEIGHT_IMPORTANCE", "0.2", func(c *config.Config) { c.Weights[h4r.Importance] = 0.2 }},
		{"H4R_WEIGHT_CAUSALITY", "1.5", func(c *config.Config) { c.Weights[h4r.Causality] = 1.5 }},
		{"H4R_WEIGHT_NOVELTY", "0.01", func(c *config.Config) { c.Weights[h4r.Novelty] = 0.01 }},
		{"H4R_WEIGHT_TRUST", "0.3", func(c *config.Config) { c.Weights[h4r.Trust] = 0.3 }},
		{"H4R_WEIGHT_SENSITIVITY", "1e-2", func(c *config.Config) { c.Weights[h4r.Sensitivity] = 0.01 }},
		{"H4R_WEIGHTS_FILE", "/etc/h4r/weights.json", func(c *config.Config) { c.WeightsFile = "/etc/h4r/weights.json" }},
		{"H4R_RECENCY_DECAY_LAMBDA", "0.05", func(c *config.Config) { c.RecencyDecayLambda = 0.05 }},
		{"H4R_MAX_HOPS", "5", func(c *config.Config) { c.MaxHops = 5 }},
		{"H4R_CAUSAL_LINK_TYPES", "caused_by, fixes", func(c *config.Config) { c.CausalLinkTypes = "caused_by, fixes" }},
		{"H4R_ACCESS_COUNTING", "delivery", func(c *config.Config) { c.AccessCounting = "delivery" }},
		{"H4R_STOP_WORDS", "none", func(c *config.Config) { c.StopWords = "none" }},
		{"H4R_QUERY_EXPANSION", "true", func(c *config.Config) { c.QueryExpansion = true }},
		{"H4R_EXPANSION_DOCS", "8", func(c *config.Config) { c.ExpansionDocs = 8 }},
		{"H4R_EXPANSION_TERMS", "20", func(c *config.Config) { c.ExpansionTerms = 20 }},
		{"H4R_EXPANSION_ORIGINAL_WEIGHT", "0.6", func(c *config.Config) { c.ExpansionWeight = 0.6 }},
		{"H4R_EXPANSION_FIRST_PASS_WEIGHT", "0.5", func(c *config.Config) { c.ExpansionFirstPass = 0.5 }},
		{"H4R_EXPANSION_CONTRAST", "true", func(c *config.Config) { c.ExpansionContrast = true }},
		{"SCS_OPA_COMPILED_PREDICATES", "0", func(c *config.Config) { c.OPACompiledPredicates = 0 }},
		{"DATABASE_URL", "postgres://h4r:secret@db:5432/h4r?sslmode=disable", func(c *config.Config) {
			c.DatabaseURL = "postgres://h4r:secret@db:5432/h4r?sslmode=disable"
		}},
		{"QDRANT_URL", "http://qdrant:6333", func(c *config.Config) { c.QdrantURL = "http://qdrant:6333" }},
		{"NEO4J_URL", "bolt+s://neo4j.internal:7687", func(c *config.Config) { c.Neo4jURL = "bolt+s://neo4j.internal:7687" }},
		{"H4R_PG_MAX_READ_CONNS", "16", func(c *config.Config) { c.PGMaxReadConns = 16 }},
		{"H4R_PG_MAX_WRITE_CONNS", "1", func(c *config.Config) { c.PGMaxWriteConns = 1 }},
		{"H4R_WRITE_TIMEOUT", "1500ms", func(c *config.Config) { c.WriteTimeout = 1500 * time.Millisecond }},
		{"H4R_VECTOR_ANN_THRESHOLD", "0", func(c *config.Config) { c.VectorANNThreshold = 0 }},
		{"H4R_ITEM_CACHE_MB", "0", func(c *config.Config) { c.ItemCacheMB = 0 }},
		{"SCS_MAX_BYTES_DEFAULT", "65536", func(c *config.Config) { c.MaxBytesDefault = 65536 }},
		{"SCS_MAX_TOKENS_DEFAULT", "8000", func(c *config.Config) { c.MaxTokensDefault = 8000 }},
		{"SCS_MAX_ITEMS_DEFAULT", "20", func(c *config.Config) { c.MaxItemsDefault = 20 }},
		{"SCS_POLICY_DIR", "/etc/h4r/policy", func(c *config.Config) { c.PolicyDir = "/etc/h4r/policy" }},
		{"SCS_OPA_URL", "https://opa.internal:8181", func(c *config.Config) { c.OPAURL = "https://opa.internal:8181" }},
		{"SCS_OPA_FALLBACK_LOCAL", "true", func(c *config.Config) { c.OPAFallbackLocal = true }},
		{"SCS_OPA_CACHE_TTL", "0ms", func(c *config.Config) { c.OPACacheTTL = 0 }},
		{"CONTEXT_PACK_TLDR_SENTENCES", "3", func(c *config.Config) { c.TLDRSentences = 3 }},
		{"CONTEXT_PACK_INCLUDE_GRAPH", "true", func(c *config.Config) { c.IncludeGraph = true }},
		{"H4R_TOKEN_ENCODING", "o200k_base", func(c *config.Config) { c.TokenEncoding = "o200k_base" }},
		{"H4R_REQUEST_TIMEOUT", "5000ms", func(c *config.Config) { c.RequestTimeout = 5 * time.Second }},
		{"H4R_GENERATOR_TIMEOUT", "250ms", func(c *config.Config) { c.GeneratorTimeout = 250 * time.Millisecond }},
		{"H4R_MAX_BODY_BYTES", "1048576", func(c *config.Config) { c.MaxBodyBytes = 1 << 20 }},
		{"H4R_MAX_CONNECTIONS", "64", func(c *config.Config) { c.MaxConnections = 64 }},
		{"H4R_MAX_CONNECTIONS_PER_ADDR", "0", func(c *config.Config) { c.MaxConnectionsPerAddr = 0 }},
		{"H4R_UNAUTHENTICATED_BODY_BYTES", "33554432", func(c *config.Config) { c.UnauthenticatedBodyBytes = 32 << 20 }},
		{"H4R_MCP_MAX_BATCH", "5", func(c *config.Config) { c.MCPMaxBatch = 5 }},
		{"H4R_SQLITE_SYNC", "normal", func(c *config.Config) { c.SQLiteSync = "normal" }},
		{"H4R_GC_HEADROOM_MB", "0", func(c *config.Config) { c.GCHeadroomMB = 0 }},
		{"H4R_DEBUG_ADDR", "127.0.0.1:6060", func(c *config.Config) { c.DebugAddr = "127.0.0.1:6060" }},
		{"H4R_LOW_RELEVANCE_THRESHOLD", "0.45", func(c *config.Config) { c.LowRelevanceThreshold = 0.45 }},
		{"H4R_AMBIENT_RELEVANCE", "0.8", func(c *config.Config) { c.AmbientRelevance = 0.8 }},
		{"H4R_AMBIENT_DEBOUNCE", "1500ms", func(c *config.Config) { c.AmbientDebounce = 1500 * time.Millisecond }},
		{"H4R_AMBIENT_MAX_PER_SESSION", "3", func(c *config.Config) { c.AmbientMaxPerSession = 3 }},
		{"H4R_AMBIENT_MAX_PER_KEY", "7", func(c *config.Config) { c.AmbientMaxPerKey = 7 }},
		{"H4R_LOG_LEVEL", "debug", func(c *config.Config) { c.LogLevel = "debug" }},
		{"H4R_LOG_FORMAT", "text", func(c *config.Config) { c.LogFormat = "text" }},
		{"H4R_API_KEYS_FILE", "/etc/h4r/keys.json", func(c *config.Config) { c.APIKeysFile = "/etc/h4r/keys.json" }},
		{"H4R_TENANTS_FILE", "/etc/h4r/tenants.json", func(c *config.Config) { c.TenantsFile = "/etc/h4r/tenants.json" }},
		{"H4R_TENANT", "acme", func(c *config.Config) { c.Tenant = "acme" }},
		{"H4R_MCP_API_KEY", "desk-key", func(c *config.Config) { c.MCPAPIKey = "desk-key" }},
		{"H4R_BRIDGE_ROLLOUT_PERCENT", "10", func(c *config.Config) { c.BridgeRolloutPercent = 10 }},
		{"H4R_MCP_UPSTREAM_URL", "http://127.0.0.1:9000/mcp", func(c *config.Config) { c.MCPUpstreamURL = "http://127.0.0.1:9000/mcp" }},
		{"H4R_MCP_UPSTREAM_COMMAND", "tools-server --stdio", func(c *config.Config) { c.MCPUpstreamCommand = "tools-server --stdio" }},
		{"H4R_MCP_UPSTREAM_PREFIX", "gh_", func(c *config.Config) { c.MCPUpstreamPrefix = "gh_" }},
		{"H4R_ANONYMOUS_AUDIT", "true", func(c *config.Config) { c.AnonymousAudit = true }},
		{"H4R_A2A_PUBLIC_URL", "https://h4r.example.com/base", func(c *config.Config) { c.A2APublicURL = "https://h4r.example.com/base" }},
		{"H4R_A2A_TASK_TTL", "1m", func(c *config.Config) { c.A2ATaskTTL = time.Minute }},
		{"H4R_A2A_TASK_MAX", "5", func(c *config.Config) { c.A2ATaskMax = 5 }},
		{"H4R_A2A_TASK_MAX_BYTES", "2097152", func(c *config.Config) { c.A2ATaskMaxBytes = 2 << 20 }},
		{"H4R_RATE_LIMIT_PER_MINUTE", "600", func(c *config.Config) { c.RateLimitPerMinute = 600 }},
		{"H4R_PACK_RETENTION", "0", func(c *config.Config) { c.PackRetention = 0 }},
		{"H4R_BRIDGE_ENABLED", "true", func(c *config.Config) { c.BridgeEnabled = true }},
		{"H4R_BRIDGE_TOOLS", "context_pack,think", func(c *config.Config) { c.BridgeTools = "context_pack,think" }},
		{"H4R_BRIDGE_MIN_SIMILARITY", "0.75", func(c *config.Config) { c.BridgeMinSimilarity = 0.75 }},
		{"H4R_BRIDGE_MAX_MATCHES", "5", func(c *config.Config) { c.BridgeMaxMatches = 5 }},
		{"H4R_BRIDGE_CACHE_SIZE", "1000", func(c *config.Config) { c.BridgeCacheSize = 1000 }},
		{"H4R_BRIDGE_TIMEOUT", "250ms", func(c *config.Config) { c.BridgeTimeout = 250 * time.Millisecond }},
		{"H4R_BRIDGE_EMBED_TIMEOUT", "100ms", func(c *config.Config) { c.BridgeEmbedTimeout = 100 * time.Millisecond }},
		{"H4R_BRIDGE_INDEX_REFRESH", "5000ms", func(c *config.Config) { c.BridgeIndexRefresh = 5 * time.Second }},
		{"H4R_SHUTDOWN_GRACE", "2500ms", func(c *config.Config) { c.ShutdownGrace = 2500 * time.Millisecond }},
		{"H4R_EMBEDDER", "openai", func(c *config.Config) { c.Embedder = "openai" }},
		{"H4R_EMBED_URL", "http://localhost:11434/v1", func(c *config.Config) { c.EmbedURL = "http://localhost:11434/v1" }},
		{"H4R_EMBED_MODEL", "nomic-embed-text", func(c *config.Config) { c.EmbedModel = "nomic-embed-text" }},
		{"H4R_EMBED_API_KEY", "sk-test", func(c *config.Config) { c.EmbedAPIKey = "sk-test" }},
		{"H4R_EMBED_DIM", "256", func(c *config.Config) { c.EmbedDim = 256 }},
		{"H4R_EMBED_TIMEOUT", "750ms", func(c *config.Config) { c.EmbedTimeout = 750 * time.Millisecond }},
		{"H4R_EMBED_CACHE_SIZE", "0", func(c *config.Config) { c.EmbedCacheSize = 0 }},
		{"H4R_FUSION", "rrf", func(c *config.Config) { c.Fusion = "rrf" }},
		{"H4R_FUSION_VECTOR_WEIGHT", "0.5", func(c *config.Config) { c.FusionVector = 0.5 }},
		{"H4R_EMBED_LEARNED_DIM", "64", func(c *config.Config) { c.EmbedLearnedDim = 64 }},
		{"H4R_VECTOR_CANDIDATES", "20", func(c *config.Config) { c.VectorCandidates = 20 }},
		{"H4R_VECTOR_FEEDBACK_DOCS", "5", func(c *config.Config) { c.VectorFeedbackDocs = 5 }},
		{"H4R_VECTOR_FEEDBACK_WEIGHT", "0.15", func(c *config.Config) { c.VectorFeedbackWeight = 0.15 }},
		{"H4R_VECTOR_FEEDBACK_MIN_SPREAD", "0.2", func(c *config.Config) { c.VectorFeedbackSpread = 0.2 }},
		{"H4R_CONVERSATION", "false", func(c *config.Config) { c.Conversation = false }},
		{"H4R_FUSION_SESSION_WEIGHT", "0.5", func(c *config.Config) { c.FusionSession = 0.5 }},
		{"H4R_FUSION_TIME_WEIGHT", "1.5", func(c *config.Config) { c.FusionTime = 1.5 }},
		{"QDRANT_API_KEY", "qk", func(c *config.Config) { c.QdrantAPIKey = "qk" }},
		{"QDRANT_COLLECTION", "memories", func(c *config.Config) { c.QdrantCollection = "memories" }},
		{"NEO4J_USER", "h4r", func(c *config.Config) { c.Neo4jUser = "h4r" }},
		{"NEO4J_PASSWORD", "pw", func(c *config.Config) { c.Neo4jPassword = "pw" }},
		{"NEO4J_DATABASE", "memory", func(c *config.Config) { c.Neo4jDatabase = "memory" }},
		{"SCS_OPA_TIMEOUT", "250ms", func(c *config.Config) { c.OPATimeout = 250 * time.Millisecond }},
		{"SCS_POLICY_WATCH", "false", func(c *config.Config) { c.PolicyWatch = false }},
		{"SCS_POLICY_NETWORK", "true", func(c *config.Config) { c.PolicyNet = true }},
		{"SCS_DECISION_LOG", "stdout", func(c *config.Config) { c.DecisionLog = "stdout" }},
		{"NATS_URL", "nats://127.0.0.1:4222", func(c *config.Config) { c.NATSURL = "nats://127.0.0.1:4222" }},
		{"NATS_CREDS", "/etc/h4r/nats.creds", func(c *config.Config) { c.NATSCreds = "/etc/h4r/nats.creds" }},
		{"H4R_TRACE_SUBJECT", "acme.trace.commit", func(c *config.Config) { c.TraceSubject = "acme.trace.commit" }},
		{"H4R_LANDED_SUBJECT", "acme.event.landed", func(c *config.Config) { c.LandedSubject = "acme.event.landed" }},
		{"H4R_TRACE_STREAM", "ACME_TRACES", func(c *config.Config) { c.TraceStream = "ACME_TRACES" }},
		{"H4R_TRACE_DURABLE", "acme", func(c *config.Config) { c.TraceDurable = "acme" }},
		{"H4R_TRACE_DEAD_LETTER_SUBJECT", "acme.trace.dead", func(c *config.Config) { c.TraceDeadLetter = "acme.trace.dead" }},
		{"H4R_TRACE_DECISION_SUBJECT", "buckley.trace.decision", func(c *config.Config) { c.DecisionSubject = "buckley.trace.decision" }},
		{"H4R_LANDING_BRANCHES", "main,release/2.x", func(c *config.Config) { c.LandingBranches = "main,release/2.x" }},
		{"H4R_GITHUB_WEBHOOK_SECRET", "s3cret", func(c *config.Config) { c.GitHubWebhookSecret = "s3cret" }},
		{"H4R_SUMMARY_URL", "http://localhost:11434/v1", func(c *config.Config) { c.SummaryURL = "http://localhost:11434/v1" }},
		{"H4R_SUMMARY_MODEL", "llama3.2", func(c *config.Config) { c.SummaryModel = "llama3.2" }},
		{"H4R_SUMMARY_API_KEY", "sk-x", func(c *config.Config) { c.SummaryAPIKey = "sk-x" }},
		{"H4R_SUMMARY_TIMEOUT", "250ms", func(c *config.Config) { c.SummaryTimeout = 250 * time.Millisecond }},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318", func(c *config.Config) { c.OTLPEndpoint = "http://localhost:4318" }},
		{"H4R_INGEST_ROOTS", "/srv/repos,/home/me/src", func(c *config.Config) { c.IngestRoots = "/srv/repos,/home/me/src" }},
		{"H4R_INGEST_MAX_FILE_BYTES", "2048", func(c *config.Config) { c.IngestMaxFileBytes = 2048 }},
		{"H4R_INGEST_CREDENTIAL_PATTERNS", "*.secret", func(c *config.Config) { c.IngestCredentialPatterns = "*.secret" }},
		{"H4R_INGEST_CREDENTIALS", "skip", func(c *config.Config) { c.IngestCredentials = "skip" }},
		{"H4R_INGEST_ALLOW_PRIVATE_URLS", "true", func(c *config.Config) { c.IngestAllowPrivateURLs = true }},
		{"H4R_CHUNK_MAX_TOKENS", "256", func(c *config.Config) { c.ChunkMaxTokens = 256 }},
		{"H4R_CHUNK_OVERLAP_TOKENS", "10", func(c *config.Config) { c.ChunkOverlapTokens = 10 }},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.FromEnv(env(map[string]string{tt.name: tt.value}))
			if err != nil {
				t.Fatalf("FromEnv(%s=%q) error: %v", tt.name, tt.value, err)
			}
			want := config.Default()
			tt.want(&want)
			if got != want {
				t.Errorf("FromEnv(%s=%q) =\n%+v\nwant\n%+v", tt.name, tt.value, got, want)
			}
		})
	}
	for _, v := range config.Vars() {
		if !covered[v.Name] {
			t.Errorf("no parse case for %s: every variable must be tested", v.Name)
		}
	}
}

func TestFromEnvValueForms(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		check func(config.Config) bool
	}{
		{"unset keeps defaults", map[string]string{}, func(c config.Config) bool { return c == config.Default() }},
		{"empty value keeps default", map[string]string{"H4R_MAX_HOPS": "", "H4R_ADDR": ""},
			func(c config.Config) bool { return c == config.Default() }},
		{"white space keeps default", map[string]string{"SCS_MAX_TOKENS_DEFAULT": "  \t"},
			func(c config.Config) bool { return c.MaxTokensDefault == 30000 }},
		{"surrounding space is trimmed", map[string]string{"H4R_WEIGHT_TRUST": " 0.2 \n"},
			func(c config.Config) bool { return c.Weights[h4r.Trust] == 0.2 }},
		{"words are case-insensitive", map[string]string{"H4R_LOG_LEVEL": "WARN", "H4R_TOKEN_ENCODING": "O200K_Base"},
			func(c config.Config) bool { return c.LogLevel == "warn" && c.TokenEncoding == "o200k_base" }},
		{"booleans accept 1 and 0", map[string]string{"CONTEXT_PACK_INCLUDE_GRAPH": "1", "SCS_POLICY_WATCH": "0"},
			func(c config.Config) bool { return c.IncludeGraph && !c.PolicyWatch }},
		{"listen on every interface", map[string]string{"H4R_ADDR": ":8080"},
			func(c config.Config) bool { return c.Addr == ":8080" }},
		{"profiles on IPv6 loopback", map[string]string{"H4R_DEBUG_ADDR": "[::1]:6060"},
			func(c config.Config) bool { return c.DebugAddr == "[::1]:6060" }},
		{"profiles on localhost, any free port", map[string]string{"H4R_DEBUG_ADDR": "localhost:0"},
			func(c config.Config) bool { return c.DebugAddr == "localhost:0" }},
		{"generator timeout may equal the request timeout", map[string]string{"H4R_GENERATOR_TIMEOUT_MS": "2000"},
			func(c config.Config) bool { return c.GeneratorTimeout == c.RequestTimeout }},
		{"weights need not sum to 1", map[string]string{"H4R_WEIGHT_RELEVANCE": "2"},
			func(c config.Config) bool { return c.Weights[h4r.Relevance] == 2 }},
		{"unrelated variables are ignored", map[string]string{"HOME": "/root", "PATH": "/bin"},
			func(c config.Config) bool { return c == config.Default() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.FromEnv(env(tt.vars))
			if err != nil {
				t.Fatalf("FromEnv(%v) error: %v", tt.vars, err)
			}
			if !tt.check(c) {
				t.Errorf("FromEnv(%v) = %+v", tt.vars, c)
			}
		})
	}
}

func TestFromEnvInvalid(t *testing.T) {
	tests := []struct {
		name        string
		vars        map[string]string
		wantField   string
		wantMessage string // a part of the message
	}{
		{"weight not a number", map[string]string{"H4R_WEIGHT_TRUST": "abc"}, "H4R_WEIGHT_TRUST", `want a number >= 0, got "abc"`},
		{"weight negative", map[string]string{"H4R_WEIGHT_RECENCY": "-0.1"}, "H4R_WEIGHT_RECENCY", `got "-0.1"`},
		{"weight NaN", map[string]string{"H4R_WEIGHT_NOVELTY": "NaN"}, "H4R_WEIGHT_NOVELTY", `got "NaN"`},
		{"weight infinite", map[string]string{"H4R_WEIGHT_RELEVANCE": "+Inf"}, "H4R_WEIGHT_RELEVANCE", `got "+Inf"`},
		{"weight overflows", map[string]string{"H4R_WEIGHT_IMPORTANCE": "1e400"}, "H4R_WEIGHT_IMPORTANCE", `got "1e400"`},
		{"weight with a comma", map[string]string{"H4R_WEIGHT_CAUSALITY": "0,5"}, "H4R_WEIGHT_CAUSALITY", `got "0,5"`},
		{"all weights zero", map[string]string{
			"H4R_WEIGHT_RELEVANCE": "0", "H4R_WEIGHT_RECENCY": "0", "H4R_WEIGHT_FREQUENCY": "0", "H4R_WEIGHT_IMPORTANCE": "0",
			"H4R_WEIGHT_CAUSALITY": "0", "H4R_WEIGHT_NOVELTY": "0", "H4R_WEIGHT_TRUST": "0", "H4R_WEIGHT_SENSITIVITY": "0",
		}, "H4R_WEIGHT_*", "must be positive"},
		{"lambda negative", map[string]string{"H4R_RECENCY_DECAY_LAMBDA": "-0.1"}, "H4R_RECENCY_DECAY_LAMBDA", "want a number >= 0"},
		{"max hops zero", map[string]string{"H4R_MAX_HOPS": "0"}, "H4R_MAX_HOPS", "from 1 to 10"},
		{"max hops above the request limit", map[string]string{"H4R_MAX_HOPS": "11"}, "H4R_MAX_HOPS", `got "11"`},
		{"max hops fractional", map[string]string{"H4R_MAX_HOPS": "2.5"}, "H4R_MAX_HOPS", `got "2.5"`},
		{"causal link types with an empty one", map[string]string{"H4R_CAUSAL_LINK_TYPES": "caused_by,,fixes"}, "H4R_CAUSAL_LINK_TYPES", "empty type at position 2"},
		{"causal link type with a space", map[string]string{"H4R_CAUSAL_LINK_TYPES": "caused by"}, "H4R_CAUSAL_LINK_TYPES", `got "caused by"`},
		{"database URL of another database", map[string]string{"DATABASE_URL": "mysql://root@db/h4r"}, "DATABASE_URL", `got scheme "mysql"`},
		{"qdrant URL without scheme", map[string]string{"QDRANT_URL": "qdrant:6333"}, "QDRANT_URL", "want a URL with scheme http, https"},
		{"neo4j URL over http", map[string]string{"NEO4J_URL": "http://neo4j:7474"}, "NEO4J_URL", `got scheme "http"`},
		{"OPA URL without host", map[string]string{"SCS_OPA_URL": "http:///v1/data"}, "SCS_OPA_URL", "with a host"},
		{"OPA URL that does not parse", map[string]string{"SCS_OPA_URL": "http://opa:81 81"}, "SCS_OPA_URL", "does not parse"},
		{"no read connections", map[string]string{"H4R_PG_MAX_READ_CONNS": "0"}, "H4R_PG_MAX_READ_CONNS", "from 1 to 1000"},
		{"write connections not a number", map[string]string{"H4R_PG_MAX_WRITE_CONNS": "two"}, "H4R_PG_MAX_WRITE_CONNS", `got "two"`},
		{"write timeout zero", map[string]string{"H4R_WRITE_TIMEOUT": "0s"}, "H4R_WRITE_TIMEOUT", "from 1ms to 10m"},
		{"write timeout alias zero", map[string]string{"H4R_WRITE_TIMEOUT_MS": "0"}, "H4R_WRITE_TIMEOUT_MS", "from 1 to 600000"},
		{"write timeout without a unit", map[string]string{"H4R_WRITE_TIMEOUT": "1500"}, "H4R_WRITE_TIMEOUT", "a number needs a unit; H4R_WRITE_TIMEOUT_MS takes milliseconds"},
		{"negative ANN threshold", map[string]string{"H4R_VECTOR_ANN_THRESHOLD": "-1"}, "H4R_VECTOR_ANN_THRESHOLD", "whole number >= 0"},
		{"negative item cache", map[string]string{"H4R_ITEM_CACHE_MB": "-1"}, "H4R_ITEM_CACHE_MB", "from 0 to 1048576"},
		{"byte budget zero", map[string]string{"SCS_MAX_BYTES_DEFAULT": "0"}, "SCS_MAX_BYTES_DEFAULT", "want a whole number >= 1"},
		{"no connections", map[string]string{"H4R_MAX_CONNECTIONS": "0"}, "H4R_MAX_CONNECTIONS", "from 1 to 1000000"},
		{"negative GC headroom", map[string]string{"H4R_GC_HEADROOM_MB": "-1"}, "H4R_GC_HEADROOM_MB", "from 0 to 1048576"},
		{"debug address on every interface", map[string]string{"H4R_DEBUG_ADDR": ":6060"}, "H4R_DEBUG_ADDR", "loopback address only"},
		{"debug address on a public host", map[string]string{"H4R_DEBUG_ADDR": "10.0.0.5:6060"}, "H4R_DEBUG_ADDR", `got "10.0.0.5:6060"`},
		{"debug address on a host name", map[string]string{"H4R_DEBUG_ADDR": "h4r.example.com:6060"}, "H4R_DEBUG_ADDR", "loopback address only"},
		{"debug address without port", map[string]string{"H4R_DEBUG_ADDR": "127.0.0.1"}, "H4R_DEBUG_ADDR", "want host:port"},
		{"token budget negative", map[string]string{"SCS_MAX_TOKENS_DEFAULT": "-5"}, "SCS_MAX_TOKENS_DEFAULT", `got "-5"`},
		{"item budget with a unit", map[string]string{"SCS_MAX_ITEMS_DEFAULT": "12k"}, "SCS_MAX_ITEMS_DEFAULT", `got "12k"`},
		{"byte budget overflows", map[string]string{"SCS_MAX_BYTES_DEFAULT": "99999999999999999999"}, "SCS_MAX_BYTES_DEFAULT", "whole number"},
		{"fallback not a boolean", map[string]string{"SCS_OPA_FALLBACK_LOCAL": "yes"}, "SCS_OPA_FALLBACK_LOCAL", `want true or false, got "yes"`},
		{"cache TTL negative", map[string]string{"SCS_OPA_CACHE_TTL_MS": "-1"}, "SCS_OPA_CACHE_TTL_MS", "milliseconds from 0 to 3600000"},
		{"cache TTL alias as a Go duration", map[string]string{"SCS_OPA_CACHE_TTL_MS": "5s"}, "SCS_OPA_CACHE_TTL_MS", `got "5s"`},
		{"cache TTL past an hour", map[string]string{"SCS_OPA_CACHE_TTL": "2h"}, "SCS_OPA_CACHE_TTL", "from 0s to 1h"},
		{"TL;DR sentences above the limit", map[string]string{"CONTEXT_PACK_TLDR_SENTENCES": "51"}, "CONTEXT_PACK_TLDR_SENTENCES", "from 0 to 50"},
		{"include graph not a boolean", map[string]string{"CONTEXT_PACK_INCLUDE_GRAPH": "on"}, "CONTEXT_PACK_INCLUDE_GRAPH", "true or false"},
		{"unknown token encoding", map[string]string{"H4R_TOKEN_ENCODING": "p50k_base"}, "H4R_TOKEN_ENCODING", "one of cl100k_base, o200k_base"},
		{"request timeout zero", map[string]string{"H4R_REQUEST_TIMEOUT_MS": "0"}, "H4R_REQUEST_TIMEOUT_MS", "from 1 to 600000"},
		{"request timeout overflows a duration", map[string]string{"H4R_REQUEST_TIMEOUT_MS": "9223372036854775807"}, "H4R_REQUEST_TIMEOUT_MS", "milliseconds"},
		{"generator timeout past the request's", map[string]string{"H4R_GENERATOR_TIMEOUT_MS": "3000"}, "H4R_GENERATOR_TIMEOUT", "at most H4R_REQUEST_TIMEOUT (2s)"},
		{"generator timeout past a lowered request timeout", map[string]string{"H4R_REQUEST_TIMEOUT": "500ms"}, "H4R_GENERATOR_TIMEOUT", `got "1s"`},
		{"body limit zero", map[string]string{"H4R_MAX_BODY_BYTES": "0"}, "H4R_MAX_BODY_BYTES", "from 1 to 1073741824"},
		{"threshold above 1", map[string]string{"H4R_LOW_RELEVANCE_THRESHOLD": "1.5"}, "H4R_LOW_RELEVANCE_THRESHOLD", "want a number in [0, 1]"},
		{"unknown log level", map[string]string{"H4R_LOG_LEVEL": "verbose"}, "H4R_LOG_LEVEL", "one of debug, info, warn, error"},
		{"unknown log format", map[string]string{"H4R_LOG_FORMAT": "xml"}, "H4R_LOG_FORMAT", `got "xml"`},
		{"address without port", map[string]string{"H4R_ADDR": "localhost"}, "H4R_ADDR", "want host:port"},
		{"address with a port out of range", map[string]string{"H4R_ADDR": "localhost:99999"}, "H4R_ADDR", `got "localhost:99999"`},
		{"address with a named port", map[string]string{"H4R_ADDR": "localhost:http"}, "H4R_ADDR", "want host:port"},
		{"A2A public URL without a scheme", map[string]string{"H4R_A2A_PUBLIC_URL": "h4r.example.com"}, "H4R_A2A_PUBLIC_URL", "http or https URL"},
		{"A2A public URL with a query", map[string]string{"H4R_A2A_PUBLIC_URL": "https://h4r.example.com/?a=1"}, "H4R_A2A_PUBLIC_URL", "without user, query or fragment"},
		{"A2A task TTL under a second", map[string]string{"H4R_A2A_TASK_TTL": "10ms"}, "H4R_A2A_TASK_TTL", "from 1s to 168h"},
		{"A2A task max zero", map[string]string{"H4R_A2A_TASK_MAX": "0"}, "H4R_A2A_TASK_MAX", "from 1 to 1000000"},
		{"A2A task bytes under a MiB", map[string]string{"H4R_A2A_TASK_MAX_BYTES": "1000"}, "H4R_A2A_TASK_MAX_BYTES", "from 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.FromEnv(env(tt.vars))
			if err == nil {
				t.Fatalf("FromEnv(%v) = %+v, want an error naming %s", tt.vars, c, tt.wantField)
			}
			if c != (config.Config{}) {
				t.Errorf("FromEnv returned a configuration with its error: %+v", c)
			}
			ps := problems(err)
			if len(ps) != 1 {
				t.Fatalf("FromEnv(%v) error %q holds %d problems, want 1", tt.vars, err, len(ps))
			}
			p := ps[0]
			if p.Code != h4r.EINVALID || p.Field != tt.wantField {
				t.Errorf("problem = %s field %q, want %s field %q", p.Code, p.Field, h4r.EINVALID, tt.wantField)
			}
			if !strings.Contains(p.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", p.Message, tt.wantMessage)
			}
			// What the operator reads at start must name the variable.
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("error text %q does not name %s", err, tt.wantField)
			}
		})
	}
}

func TestFromEnvReportsEveryInvalidVariable(t *testing.T) {
	_, err := config.FromEnv(env(map[string]string{
		"H4R_WEIGHT_TRUST":  "abc",
		"H4R_LOG_FORMAT":    "xml",
		"H4R_MAX_HOPS":      "4",  // valid: must not be reported
		"SCS_OPA_CACHE_TTL": "5s", // valid: must not be reported
	}))
	var fields []string
	for _, p := range problems(err) {
		fields = append(fields, p.Field)
	}
	// Table order, one problem per invalid variable.
	want := []string{"H4R_WEIGHT_TRUST", "H4R_LOG_FORMAT"}
	if strings.Join(fields, ",") != strings.Join(want, ",") {
		t.Errorf("problems name %v, want %v (error: %v)", fields, want, err)
	}
}

// A database URL holds a password; the error about it ends up in logs.
func TestURLErrorsDoNotQuoteTheValue(t *testing.T) {
	for _, value := range []string{
		"mysql://h4r:hunter2-secret@db/h4r",
		"postgres://h4r:hunter2-secret@db:54 32/h4r",
		"postgres://h4r:hunter2-secret@/h4r",
	} {
		_, err := config.FromEnv(env(map[string]string{"DATABASE_URL": value}))
		if err == nil {
			t.Fatalf("DATABASE_URL=%q accepted, want an error", value)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error for DATABASE_URL=%q reveals the password: %v", value, err)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		change    func(*config.Config)
		wantField string // "" for valid
	}{
		{"defaults", func(*config.Config) {}, ""},
		{"one positive weight is enough", func(c *config.Config) { c.Weights = h4r.Weights{h4r.Trust: 1} }, ""},
		{"negative weight", func(c *config.Config) { c.Weights[h4r.Trust] = -1 }, "H4R_WEIGHT_TRUST"},
		{"NaN weight", func(c *config.Config) { c.Weights[h4r.Sensitivity] = math.NaN() }, "H4R_WEIGHT_SENSITIVITY"},
		{"infinite weight", func(c *config.Config) { c.Weights[h4r.Relevance] = math.Inf(1) }, "H4R_WEIGHT_RELEVANCE"},
		{"all weights zero", func(c *config.Config) { c.Weights = h4r.Weights{} }, "H4R_WEIGHT_*"},
		{"negative lambda", func(c *config.Config) { c.RecencyDecayLambda = -0.5 }, "H4R_RECENCY_DECAY_LAMBDA"},
		{"zero hops", func(c *config.Config) { c.MaxHops = 0 }, "H4R_MAX_HOPS"},
		{"empty data dir", func(c *config.Config) { c.DataDir = "" }, "H4R_DATA_DIR"},
		{"bad address", func(c *config.Config) { c.Addr = "8080" }, "H4R_ADDR"},
		{"zero write connections", func(c *config.Config) { c.PGMaxWriteConns = 0 }, "H4R_PG_MAX_WRITE_CONNS"},
		{"negative write timeout", func(c *config.Config) { c.WriteTimeout = -time.Second }, "H4R_WRITE_TIMEOUT"},
		{"zero byte budget", func(c *config.Config) { c.MaxBytesDefault = 0 }, "SCS_MAX_BYTES_DEFAULT"},
		{"zero token budget", func(c *config.Config) { c.MaxTokensDefault = 0 }, "SCS_MAX_TOKENS_DEFAULT"},
		{"negative item budget", func(c *config.Config) { c.MaxItemsDefault = -1 }, "SCS_MAX_ITEMS_DEFAULT"},
		{"negative cache TTL", func(c *config.Config) { c.OPACacheTTL = -time.Second }, "SCS_OPA_CACHE_TTL"},
		{"OPA URL with a bad scheme", func(c *config.Config) { c.OPAURL = "grpc://opa:9191" }, "SCS_OPA_URL"},
		{"negative TL;DR sentences", func(c *config.Config) { c.TLDRSentences = -1 }, "CONTEXT_PACK_TLDR_SENTENCES"},
		{"unknown encoding", func(c *config.Config) { c.TokenEncoding = "r50k_base" }, "H4R_TOKEN_ENCODING"},
		{"zero request timeout", func(c *config.Config) { c.RequestTimeout = 0 }, "H4R_REQUEST_TIMEOUT"},
		{"generator timeout past the request's", func(c *config.Config) { c.GeneratorTimeout = 3 * time.Second }, "H4R_GENERATOR_TIMEOUT"},
		{"zero body limit", func(c *config.Config) { c.MaxBodyBytes = 0 }, "H4R_MAX_BODY_BYTES"},
		{"threshold below 0", func(c *config.Config) { c.LowRelevanceThreshold = -0.1 }, "H4R_LOW_RELEVANCE_THRESHOLD"},
		{"upper-case log level", func(c *config.Config) { c.LogLevel = "INFO" }, "H4R_LOG_LEVEL"},
		{"unknown log format", func(c *config.Config) { c.LogFormat = "logfmt" }, "H4R_LOG_FORMAT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.change(&c)
			err := c.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			ps := problems(err)
			if len(ps) != 1 || ps[0].Field != tt.wantField || ps[0].Code != h4r.EINVALID {
				t.Fatalf("Validate() = %v, want one invalid_argument naming %s", err, tt.wantField)
			}
		})
	}
}

func TestEnvExampleFile(t *testing.T) {
	path := filepath.Join("..", ".env.example")
	want := config.EnvExample()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the committed .env.example: %v (run go test ./config -run TestEnvExampleFile -update)", err)
	}
	if string(got) != want {
		t.Errorf(".env.example differs from config.EnvExample(); run go test ./config -run TestEnvExampleFile -update")
	}
}

// Reading .env.example back as an environment must give the defaults, and
// list every variable once: the file is both documentation and a valid .env.
func TestEnvExampleIsTheDefaults(t *testing.T) {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(config.EnvExample()))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("line %q is neither a comment nor NAME=value", line)
		}
		if _, dup := vars[name]; dup {
			t.Errorf("%s is listed twice", name)
		}
		vars[name] = value
	}
	for _, v := range config.Vars() {
		if _, ok := vars[v.Name]; !ok {
			t.Errorf("%s is missing from .env.example", v.Name)
		}
	}
	if len(vars) != len(config.Vars()) {
		t.Errorf(".env.example sets %d variables, Vars has %d", len(vars), len(config.Vars()))
	}
	c, err := config.FromEnv(env(vars))
	if err != nil {
		t.Fatalf("FromEnv(.env.example) error: %v", err)
	}
	if c != config.Default() {
		t.Errorf("FromEnv(.env.example) = %+v, want Default()", c)
	}
}

func TestUnknownVars(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"none", []string{"HOME=/root", "H4R_ADDR=:8080", "DATABASE_URL="}, nil},
		{"misspelt weight", []string{"H4R_WEIGHT_RELEVENCE=0.5", "PATH=/bin"}, []string{"H4R_WEIGHT_RELEVENCE"}},
		{"every prefix, sorted, once", []string{"SCS_MAX_TOKEN_DEFAULT=1", "CONTEXT_PACK_TLDR=3", "H4R_PORT=1", "H4R_PORT=2"},
			[]string{"CONTEXT_PACK_TLDR", "H4R_PORT", "SCS_MAX_TOKEN_DEFAULT"}},
		{"other programs' variables", []string{"DATABASE=x", "SCSI_DEVICE=sda", "H4RX=1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := config.UnknownVars(tt.environ)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("UnknownVars(%v) = %v, want %v", tt.environ, got, tt.want)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	tests := []struct {
		name, level, format string
		wantDebug           bool
		wantPrefix          string
	}{
		{"json at info", "info", "json", false, `{"time":`},
		{"text at debug", "debug", "text", true, "time="},
		{"json at error hides warnings", "error", "json", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			c.LogLevel, c.LogFormat = tt.level, tt.format
			var buf bytes.Buffer
			log := c.Logger(&buf)
			log.Debug("debug line")
			log.Warn("warn line")
			out := buf.String()
			if got := strings.Contains(out, "debug line"); got != tt.wantDebug {
				t.Errorf("debug written = %v, want %v; output %q", got, tt.wantDebug, out)
			}
			if tt.wantPrefix == "" {
				if out != "" {
					t.Errorf("output %q, want nothing at level %s", out, tt.level)
				}
				return
			}
			if !strings.HasPrefix(out, tt.wantPrefix) || !strings.Contains(out, "warn line") {
				t.Errorf("output %q, want %s lines starting %q", out, tt.format, tt.wantPrefix)
			}
		})
	}
}

func TestSQLitePath(t *testing.T) {
	c := config.Default()
	c.DataDir = "/var/lib/h4r"
	if got, want := c.SQLitePath(), filepath.Join("/var/lib/h4r", "h4r.db"); got != want {
		t.Errorf("SQLitePath() = %q, want %q", got, want)
	}
}

// FromEnv reads outside input: whatever a variable holds, it must not
// panic, a configuration it accepts must validate, and every problem it
// reports must name one of the variables.
func FuzzFromEnv(f *testing.F) {
	f.Add(uint8(0), "127.0.0.1:8080")
	f.Add(uint8(8), "abc")
	f.Add(uint8(12), "postgres://u:p@h:5432/d")
	f.Add(uint8(22), "NaN")
	f.Add(uint8(26), "-9223372036854775808")
	f.Add(uint8(29), "DEBUG")
	f.Add(uint8(15), "caused_by,,fixes") // H4R_CAUSAL_LINK_TYPES
	known := map[string]bool{"H4R_WEIGHT_*": true}
	for _, v := range config.Vars() {
		known[v.Name] = true
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		vars := config.Vars()
		name := vars[int(which)%len(vars)].Name
		c, err := config.FromEnv(env(map[string]string{name: value}))
		if err != nil {
			ps := problems(err)
			if len(ps) == 0 {
				t.Fatalf("%s=%q: error %v holds no *h4r.Error", name, value, err)
			}
			for _, p := range ps {
				if !known[p.Field] {
					t.Fatalf("%s=%q: problem names %q, not a variable", name, value, p.Field)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s=%q: FromEnv accepted a configuration that fails Validate: %v", name, value, err)
		}
	})
}

func ExampleFromEnv() {
	_, err := config.FromEnv(env(map[string]string{"H4R_WEIGHT_TRUST": "abc"}))
	var e *h4r.Error
	if errors.As(err, &e) {
		os.Stdout.WriteString(e.Field + ": " + e.Message + "\n")
	}
	// Output: H4R_WEIGHT_TRUST: want a number >= 0, got "abc"
}

func TestLinkTypes(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
	}{
		{"default", config.DefaultCausalLinkTypes, []string{"caused_by", "causes", "fixes", "corrects", "introduced_in", "outcome_of",
			"depends_on", "derived_from", "references", "cites", "cites_precedent", "applies_pattern", "resolves_conflict_from", "learned_from"}},
		{"all: every type", "all", nil},
		{"all in capitals, spaced", " ALL ", nil},
		{"spaces trimmed, duplicates dropped", " fixes , caused_by,fixes", []string{"fixes", "caused_by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := config.LinkTypes(tt.value); !slices.Equal(got, tt.want) {
				t.Errorf("LinkTypes(%q) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
	for _, ty := range config.LinkTypes(config.DefaultCausalLinkTypes) {
		if ty == "follows" || ty == "contains" || ty == "similar_to" {
			t.Errorf("the default causal link types include %q, a link of order, containment or likeness", ty)
		}
	}
}
