package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/scs"
)

// indexTrajectories makes the context bridge's signature index a mirror
// of the store when the bridge is on: every write's ids are re-read and
// trajectories (re)indexed, so a cache miss is a lookup in memory
// (bridge.IndexSource) rather than a pack. With the bridge off nothing is
// kept and writes pay nothing.
func indexTrajectories(a *App, cfg config.Config) {
	if !cfg.BridgeEnabled {
		return
	}
	a.trajectories = bridge.NewIndex(bridge.TechExtractor{})
	a.mirrors = append(a.mirrors, storeMirror{name: "bridge-index", sync: func(ctx context.Context, ids []string) error {
		return a.trajectories.Sync(ctx, a.base, ids)
	}})
}

// trajectoryFeedPoll is how often the signature index reads the store's
// log of item changes (Postgres) at the latest: it reads it at once when
// the store notifies a change, and this bounds how late a trajectory
// written or deleted through another replica is in step here when a
// notification is lost (TestBridgeAcrossReplicas measures both).
const trajectoryFeedPoll = 250 * time.Millisecond

// itemFeed is a store that logs its item changes for every replica
// (store/postgres.Store).
type itemFeed interface {
	ItemChangeMark(ctx context.Context) (int64, error)
	ItemChangesSince(ctx context.Context, mark int64, kinds []string) (ids []string, next int64, reload bool, err error)
	// ListenItemChanges calls signal when item changes commit, until ctx
	// ends.
	ListenItemChanges(ctx context.Context, signal func()) error
}

// Bridge returns the context bridge configured by the
// H4R_BRIDGE_* variables. A cache miss looks the call up in the signature
// index and passes the best trajectories through the policy slicer and
// the default budgets; until the index has loaded (in the background) it
// reads them with a pack through the engine. The index follows the
// store's writes: this process's at once (a mirror), other replicas'
// through the store's log of item changes on Postgres, or by a reload
// every H4R_BRIDGE_INDEX_REFRESH on SQLite. Answers are cached per
// caller and policy revision until the index changes, and every answer is
// checked against the stored versions of its matches at delivery, so that
// a trajectory deleted or written again is not served from a copy.
// Similarity is hybrid when an embedding server is configured
// (H4R_EMBEDDER=openai); the built-in hashing embedder is lexical, so
// with it matching is concept-only.
func (a *App) Bridge(log *slog.Logger) (*bridge.Bridge, error) {
	c := a.Config
	cfg := bridge.Config{Enabled: c.BridgeEnabled, MinSimilarity: c.BridgeMinSimilarity, MaxMatches: c.BridgeMaxMatches,
		CacheSize: c.BridgeCacheSize, Timeout: c.BridgeTimeout, EmbedTimeout: c.BridgeEmbedTimeout,
		HoldBackPercent: 100 - c.BridgeRolloutPercent}
	for _, t := range strings.Split(c.BridgeTools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			cfg.Tools = append(cfg.Tools, t)
		}
	}
	opts := []bridge.Option{bridge.WithLogger(log)}
	if a.Policy != nil {
		opts = append(opts, bridge.WithPolicyRevision(a.Policy.Revision))
	}
	if v, ok := a.base.(bridge.VersionReader); ok {
		opts = append(opts, bridge.WithVersions(v))
	}
	if c.Embedder == "openai" {
		_, queries, err := embedders(c, log)
		if err != nil {
			return nil, fmt.Errorf("the context bridge's embedder: %w", err)
		}
		opts = append(opts, bridge.WithEmbedder(queries))
	}
	var source bridge.Source = bridge.EngineSource{Packer: a.Engine}
	if a.trajectories != nil {
		idx := bridge.IndexSource{Index: a.trajectories, Slicer: a.Slicer, Fallback: source,
			Budget: scs.Limits{MaxBytes: c.MaxBytesDefault, MaxTokens: c.MaxTokensDefault}}
		if c.Embedder != "openai" {
			idx.Floor = c.BridgeMinSimilarity // concept-only: nothing below can match
		}
		source = idx
		if feed, ok := a.base.(itemFeed); ok {
			a.followTrajectories(feed, log)
		} else {
			a.refreshTrajectories(log)
		}
	}
	return bridge.New(cfg, source, opts...)
}

// followTrajectories loads the signature index, then keeps it in step
// with every replica's writes by reading the store's log of item changes
// when the store notifies a change, and every trajectoryFeedPoll, in the
// background until Close. The mark is read before the load, so that a
// change committed during the load is read again after it (Sync reads the
// item as it is then).
func (a *App) followTrajectories(feed itemFeed, log *slog.Logger) {
	wake := make(chan struct{}, 1)
	a.background(func(ctx context.Context) {
		_ = feed.ListenItemChanges(ctx, func() {
			select {
			case wake <- struct{}{}:
			default: // a read is due already
			}
		})
	})
	a.background(func(ctx context.Context) {
		tick := time.NewTicker(trajectoryFeedPoll)
		defer tick.Stop()
		var mark int64
		loaded := false
		for {
			var err error
			if !loaded {
				if mark, err = feed.ItemChangeMark(ctx); err == nil {
					err = a.trajectories.Load(ctx, a.base)
				}
				loaded = err == nil
			} else {
				var ids []string
				var next int64
				var reload bool
				switch ids, next, reload, err = feed.ItemChangesSince(ctx, mark, []string{bridge.KindTrajectory}); {
				case err != nil:
				case reload: // further behind than the log: load again now
					loaded = false
					continue
				default:
					if err = a.trajectories.Sync(ctx, a.base, ids); err == nil {
						mark = next
					}
				}
			}
			if err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "context bridge: following the store's trajectory writes failed; retrying (answers are still checked against the store)", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-wake:
			}
		}
	})
}

// refreshTrajectories loads the signature index now and then every
// H4R_BRIDGE_INDEX_REFRESH in the background, until Close: for a
// store without a log of changes, it catches other processes' writes.
func (a *App) refreshTrajectories(log *slog.Logger) {
	a.background(func(ctx context.Context) {
		tick := time.NewTicker(a.Config.BridgeIndexRefresh)
		defer tick.Stop()
		for {
			if err := a.trajectories.Load(ctx, a.base); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "context bridge: loading the trajectory index failed; misses read through the engine until it loads", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
}

// background runs fn in a goroutine until Close, which cancels its
// context and waits for it to return.
func (a *App) background(fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	a.closers = append(a.closers, func() error {
		cancel()
		<-done
		return nil
	})
}

// OnClose makes Close run fn (after what was opened later), for what
// the commands open beside the app: an upstream MCP session, say.
func (a *App) OnClose(fn func() error) { a.closers = append(a.closers, fn) }

// JobBackfillSignatures is the kind of the job that (re)computes the
// signatures of stored trajectories (POST /admin/backfill-signatures).
const JobBackfillSignatures = "backfill-signatures"

// BackfillRate is how many trajectories a backfill writes per second at
// most, so that it does not crowd out the store's other writers.
const BackfillRate = 100

// StartBackfillSignatures starts a backfill job owned by owner (a key id,
// or "").
func (j *Jobs) StartBackfillSignatures(ctx context.Context, owner string) (jobs.Job, error) {
	return j.Runner.Start(ctx, JobBackfillSignatures, owner, struct{}{}, nil)
}

// runBackfillSignatures rewrites every stored trajectory (the newest
// bridge.MaxIndexed) whose signature is not the one bridge.Resign makes
// now, e.g. written through /v1/items without its concepts, or by an
// older extractor, at most BackfillRate a second. Progress counts the
// trajectories seen (items_done of items_total) and those rewritten
// (files_changed); one that fails to be written is listed in errors and
// the rest go on. The signature index follows the writes as it follows
// any (the store's mirror or log of changes).
func runBackfillSignatures(ctx context.Context, a *App, report func(jobs.Progress)) (jobs.Progress, error) {
	p := jobs.Progress{Errors: []jobs.FileIssue{}}
	items, err := a.Store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{bridge.KindTrajectory}}, Limit: bridge.MaxIndexed})
	if err != nil {
		return p, fmt.Errorf("listing the stored trajectories: %w", err)
	}
	p.ItemsTotal = len(items)
	report(p)
	pace := time.NewTicker(time.Second / BackfillRate)
	defer pace.Stop()
	for _, it := range items {
		if it == nil {
			continue
		}
		resigned, changed := bridge.Resign(*it)
		if changed {
			select {
			case <-ctx.Done():
				return p, ctx.Err()
			case <-pace.C:
			}
			if _, err := a.Store.Upsert(ctx, []h4r.Item{resigned}); err != nil {
				if ctx.Err() != nil {
					return p, ctx.Err()
				}
				p.AddError(it.ID, err.Error())
			} else {
				p.FilesChanged++
			}
		} else {
			p.FilesUnchanged++
		}
		p.ItemsDone++
		if p.ItemsDone%50 == 0 {
			report(p)
		}
	}
	p.Message = fmt.Sprintf("%d of %d trajectories given their current signature", p.FilesChanged, p.ItemsTotal)
	return p, nil
}
