// Package app wires one H4R service from a config.Config: the store, the
// policy engine, the slicer, the pack builder and the request engine. The
// CLI, the server and end-to-end tests all build the service here, so tests
// exercise the production wiring.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/h4r/h4r/affordance"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/pack"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/sources"
	"github.com/h4r/h4r/sources/sqlite"
	"github.com/h4r/h4r/tokens"
)

// Store is what the service needs of a store (sources/sqlite.Store; the
// Postgres store implements the same contract, sources/storetest).
type Store interface {
	Upsert(ctx context.Context, items []sources.Item) ([]string, error)
	Get(ctx context.Context, id string) (*sources.Item, error)
	Delete(ctx context.Context, id string) error
	Count(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
	FullText() sources.Generator
	Graph() sources.Generator
	RecordAccess(ids []string)
	Close() error
}

// App is the wired service: a store, the policy engine and the request
// engine built from one Config.
type App struct {
	Config config.Config
	Store  Store
	Policy *policy.Engine
	Engine *engine.Engine
}

// Option configures Open.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sets the logger (default: the one cfg describes, on stderr).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock of the store and the ranker (tests fix it so
// that recency, and so rankings, are reproducible).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Open builds the service. It refuses settings that select parts this build
// does not have yet, rather than silently ignoring them.
func Open(ctx context.Context, cfg config.Config, opts ...Option) (*App, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = cfg.Logger(os.Stderr)
	}
	log := o.log
	for _, unsupported := range []struct{ name, value, what string }{
		{"DATABASE_URL", cfg.DatabaseURL, "the Postgres store"},
		{"QDRANT_URL", cfg.QdrantURL, "the Qdrant vector generator"},
		{"NEO4J_URL", cfg.Neo4jURL, "the Neo4j hop generator"},
		{"SCS_OPA_URL", cfg.OPAURL, "remote OPA"},
	} {
		if unsupported.value != "" {
			return nil, fmt.Errorf("%s is set, but %s is not part of this version yet; unset it to use the embedded default", unsupported.name, unsupported.what)
		}
	}
	counter, err := tokens.New(cfg.TokenEncoding)
	if err != nil {
		return nil, fmt.Errorf("H4R_TOKEN_ENCODING: %w", err)
	}
	dbPath := cfg.SQLitePath()
	store, err := sqlite.Open(ctx, dbPath, sqlite.WithTokenCounter(counter), sqlite.WithLogger(log), sqlite.WithClock(o.now))
	if err != nil {
		return nil, fmt.Errorf("opening the embedded store %s: %w", dbPath, err)
	}
	var popts []policy.Option
	if cfg.PolicyDir != "" {
		popts = append(popts, policy.WithPolicyDir(cfg.PolicyDir))
	}
	pol, err := policy.New(ctx, popts...)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("loading the policy: %w", err), store.Close())
	}
	var sopts []scs.Option
	if cfg.OPAFallbackLocal {
		sopts = append(sopts, scs.WithFallback(policy.LocalRules{}))
	}
	rules := affordance.DefaultRules()
	for i := range rules {
		if rules[i].WhenBestRelevanceBelow > 0 {
			rules[i].WhenBestRelevanceBelow = cfg.LowRelevanceThreshold
		}
	}
	eng, err := engine.New(
		engine.WithTextGenerators(store.FullText()),
		engine.WithGraphGenerator(store.Graph()),
		engine.WithSlicer(scs.New(pol, counter, sopts...)),
		engine.WithPackBuilder(pack.NewBuilder(
			pack.WithTLDRSentences(cfg.TLDRSentences),
			pack.WithIncludeGraph(cfg.IncludeGraph),
			pack.WithAffordanceRules(rules),
		)),
		engine.WithAccessRecorder(store),
		engine.WithSettings(engine.Settings{
			Weights: cfg.Weights,
			Lambda:  cfg.RecencyDecayLambda,
			MaxHops: cfg.MaxHops,
			Budget: scs.Limits{
				MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault,
			},
			GeneratorTimeout: cfg.GeneratorTimeout,
		}),
		engine.WithLogger(log),
		engine.WithClock(o.now),
	)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("building the engine: %w", err), store.Close())
	}
	return &App{Config: cfg, Store: store, Policy: pol, Engine: eng}, nil
}

// Close flushes access counts and closes the store.
func (a *App) Close() error { return a.Store.Close() }

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
