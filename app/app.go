package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/affordance"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/conversation"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/memory"
	"github.com/h4r/h4r/pack"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/tokens"
)

// Store is what the service needs of a store (store/sqlite.Store; the
// Postgres store implements the same contract, store/storetest).
type Store interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	// Replace upserts items and deletes ids in one transaction.
	Replace(ctx context.Context, items []h4r.Item, deletes []string) ([]string, error)
	// ReplaceIf is Replace done only when check holds in its transaction
	// (h4r.ErrVersionConflict otherwise): read-modify-write of one item.
	ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Delete(ctx context.Context, id string) error
	Count(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
	FullText() h4r.Generator
	Graph() h4r.Generator
	RecordAccess(ids []string)
	Each(ctx context.Context, fn func(*h4r.Item) error) error
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
	// AddLink adds one link to an item atomically (memory.link).
	AddLink(ctx context.Context, id string, l h4r.Link) (bool, error)
	Close() error
}

// App is the wired service: a store, the policy engine and the request
// engine built from one Config.
type App struct {
	Config config.Config
	Store  Store
	Policy Policy
	Engine *engine.Engine
	// Slicer is the engine's policy slicer, for reads by id that must
	// pass policy like packs do (trace reads).
	Slicer *scs.Slicer
	// Decisions records decision traces and answers precedent queries
	// over Store, through the same policy slicer as the engine.
	Decisions *decision.Service
	// Memory runs the retrieval contract's memory tools over Store, through the
	// same policy slicer as packs.
	Memory *memory.Service

	// Checks are the backends besides the store that /health/ready asks,
	// by name ("qdrant", "neo4j").
	Checks map[string]func(context.Context) error

	base        Store                              // the store as opened, before mirroring
	mirrors     []storeMirror                      // copies kept in step with base, in write order
	graphMirror *neo4j.Mirror                      // nil without NEO4J_URL
	vectorCount func(context.Context) (int, error) // nil: no vector index
	learner     *learner                           // nil unless H4R_EMBEDDER=learned
	// trajectories is the context bridge's signature index, kept in step
	// with writes as a mirror; nil with the bridge off (bridge.go).
	trajectories *bridge.Index
	// tokens is the counter of Config.TokenEncoding that the store and
	// the slicer count with; the ingestion jobs share it rather than load
	// its tables again (they are read-only).
	tokens  *tokens.Counter
	closers []func() error // run by Close, last first
	warming warming        // the in-memory indexes still being built (warm.go)
}

// Option configures Open.
type Option func(*options)

type options struct {
	log              *slog.Logger
	now              func() time.Time
	observeEmbedding func(time.Duration) // nil: not observed
	guard            WriteGuard          // nil: every write admitted
	// modelPoll and relearnCheck replace modelPollEvery and
	// relearnCheckEvery (learned.go) when not zero: tests shorten them.
	modelPoll, relearnCheck time.Duration
	engine                  []engine.Option // applied after Open's own
}

// WithLogger sets the logger (default: the one cfg describes, on stderr).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithEmbeddingObserver receives the duration of every document
// embedding (ingest, reindex): context_embedding_duration_seconds.
func WithEmbeddingObserver(fn func(time.Duration)) Option {
	return func(o *options) { o.observeEmbedding = fn }
}

// WithClock sets the clock of the store and the ranker (tests fix it so
// that recency, and so rankings, are reproducible).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithEngineOptions adds options to the pack engine's, after Open's own,
// so that a setter among them (WithSlicer, WithLoading) replaces Open's:
// the canary harness stalls the engine's policy stage and names an index
// as loading, to probe the late and loading answers.
func WithEngineOptions(opts ...engine.Option) Option {
	return func(o *options) { o.engine = append(o.engine, opts...) }
}

// Open builds the service. Each backend is chosen in its own file (store.go,
// vectors.go, graph.go, policy.go). Open refuses settings that select parts
// this build does not have yet, rather than silently ignoring them.
func Open(ctx context.Context, cfg config.Config, opts ...Option) (_ *App, err error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = cfg.Logger(os.Stderr)
	}
	if err := cfg.ApplyWeightsFile(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Checks: map[string]func(context.Context) error{}}
	a.Checks["warm-up"] = a.warming.check
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Close())
		}
	}()
	counter, err := tokens.New(cfg.TokenEncoding)
	if err != nil {
		return nil, fmt.Errorf("H4R_TOKEN_ENCODING: %w", err)
	}
	a.tokens = counter
	if a.base, err = openStore(ctx, cfg, counter, o); err != nil {
		return nil, err
	}
	a.Store = a.base
	a.closers = append(a.closers, a.base.Close)
	warmFullText(a, a.base, o.log)
	warmItems(a, a.base, o.log)
	text, fusion, err := textGenerators(ctx, cfg, a, o)
	if err != nil {
		return nil, err
	}
	graph, err := graphGenerator(ctx, cfg, a, o)
	if err != nil {
		return nil, err
	}
	indexTrajectories(a, cfg)
	if len(a.mirrors) > 0 {
		a.Store = &mirroredStore{Store: a.base, mirrors: a.mirrors, log: o.log}
	}
	if o.guard != nil {
		a.Store = &guardedStore{Store: a.Store, guard: o.guard}
	}
	slicer, err := newSlicer(ctx, cfg, a, counter, o)
	if err != nil {
		return nil, err
	}
	a.Slicer = slicer
	a.Memory = memory.New(a.Store, slicer, memory.WithClock(o.now), memory.WithBudget(scs.Limits{
		MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault,
	}))
	rules := affordance.DefaultRules()
	for i := range rules {
		if rules[i].WhenBestRelevanceBelow > 0 {
			rules[i].WhenBestRelevanceBelow = cfg.LowRelevanceThreshold
		}
	}
	stop, err := analysis.StopList(cfg.StopWords)
	if err != nil {
		return nil, fmt.Errorf("loading the stop words (H4R_STOP_WORDS): %w", err)
	}
	expander := analysis.New(stop)
	var snapshots []engine.Option
	if s, ok := a.base.(engine.Snapshots); ok { // the embedded store
		snapshots = append(snapshots, engine.WithSnapshots(s))
	}
	a.Engine, err = engine.New(append(append([]engine.Option{
		engine.WithTextGenerators(text...),
		engine.WithGraphGenerator(graph),
		engine.WithSlicer(slicer),
		engine.WithPackBuilder(pack.NewBuilder(
			pack.WithTLDRSentences(cfg.TLDRSentences),
			pack.WithIncludeGraph(cfg.IncludeGraph),
			pack.WithAffordanceRules(rules),
		)),
		engine.WithAccessRecorder(a.Store),
		engine.WithSettings(engine.Settings{
			Weights:         cfg.Weights,
			Lambda:          cfg.RecencyDecayLambda,
			MaxHops:         cfg.MaxHops,
			CausalLinkTypes: config.LinkTypes(cfg.CausalLinkTypes),
			Budget: scs.Limits{
				MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault,
			},
			GeneratorTimeout: cfg.GeneratorTimeout,
			Fusion:           fusion,
			CountDeliveries:  cfg.AccessCounting == "delivery",
			ExpandQueries:    cfg.QueryExpansion,
			VectorFeedback:   engine.VectorFeedback{Docs: cfg.VectorFeedbackDocs, Weight: cfg.VectorFeedbackWeight, MinSpread: cfg.VectorFeedbackSpread},
			Expansion: analysis.Expansion{
				Docs: cfg.ExpansionDocs, Terms: cfg.ExpansionTerms, OriginalWeight: cfg.ExpansionWeight, FirstPass: cfg.ExpansionFirstPass,
				Contrast: cfg.ExpansionContrast,
			},
			Conversation: conversationOptions(cfg),
		}),
		engine.WithQueryExpansion(expander, bm25.Term),
		engine.WithLogger(o.log),
		engine.WithClock(o.now),
		engine.WithLoading(func() []string { return a.warming.loading(context.Background()) }),
	}, snapshots...), o.engine...)...)
	if err != nil {
		return nil, fmt.Errorf("building the engine: %w", err)
	}
	a.Decisions = decision.New(a.Store, slicer, decision.WithClock(o.now), decision.WithBudget(scs.Limits{
		MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault,
	}))
	return a, nil
}

// Close releases what Open acquired, last first: the store's Close flushes
// access counts.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// LoadConfig reads the environment; flags are applied by each command.
// Errors list every invalid variable as "NAME: what is wrong".
func LoadConfig(lookupEnv func(string) (string, bool)) (config.Config, error) {
	cfg, err := config.FromEnv(lookupEnv)
	if err == nil {
		return cfg, nil
	}
	var lines []string
	for _, e := range unjoin(err) {
		lines = append(lines, e.Error()) // *h4r.Error reads "VARIABLE: what is wrong"
	}
	return cfg, fmt.Errorf("invalid configuration:\n  %s", strings.Join(lines, "\n  "))
}

// unjoin returns the errors joined (errors.Join) somewhere in err's chain,
// or err itself.
func unjoin(err error) []error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		return joined.Unwrap()
	}
	return []error{err}
}

// DatabaseSize is the size of the store's data in bytes (on Postgres its
// schema's tables and indexes, on SQLite the file's pages); nil when the
// store cannot say.
func (a *App) DatabaseSize() func(context.Context) (int64, error) {
	if ds, ok := a.base.(interface {
		DatabaseSize(context.Context) (int64, error)
	}); ok {
		return ds.DatabaseSize
	}
	return nil
}

// conversationOptions are the engine's conversation settings: nil (off)
// unless H4R_CONVERSATION.
func conversationOptions(cfg config.Config) *conversation.Options {
	if !cfg.Conversation {
		return nil
	}
	return &conversation.Options{}
}
