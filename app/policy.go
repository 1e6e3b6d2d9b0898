package app

import (
	"context"
	"fmt"
	"os"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/tokens"
)

// Policy is the policy that decides, as the server and the CLI see it:
// policy.Live (embedded OPA, reloaded when SCS_POLICY_DIR changes) or
// policy.Remote (SCS_OPA_URL).
type Policy interface {
	Revision() string
	Source() string
	Status() h4r.PolicyStatus
}

// newSlicer loads the policy the configuration selects (bundled,
// SCS_POLICY_DIR, or a remote OPA at SCS_OPA_URL) and returns the slicer
// that applies it, with the decision cache and the decision log.
func newSlicer(ctx context.Context, cfg config.Config, a *App, counter *tokens.Counter, o options) (*scs.Slicer, error) {
	var cache *policy.Cache
	if cfg.OPACacheTTL > 0 {
		cache = policy.NewCache(policy.DefaultCacheSize, cfg.OPACacheTTL)
	}
	var decider h4r.Decider
	if cfg.OPAURL != "" {
		ropts := []policy.RemoteOption{policy.WithTimeout(cfg.OPATimeout)}
		if cache != nil {
			ropts = append(ropts, policy.WithRemoteCache(cache))
		}
		remote, err := policy.NewRemote(cfg.OPAURL, ropts...)
		if err != nil {
			return nil, err
		}
		a.Policy, decider = remote, remote
	} else {
		lopts := []policy.LiveOption{policy.WithLogger(o.log), policy.WithEngineOptions(
			policy.WithCompiledPredicates(cfg.OPACompiledPredicates), policy.WithNetworkBuiltins(cfg.PolicyNet))}
		if cache != nil {
			lopts = append(lopts, policy.WithCache(cache))
		}
		if cfg.PolicyWatch && cfg.PolicyDir != "" {
			lopts = append(lopts, policy.WithWatch(0))
		}
		live, err := policy.NewLive(ctx, cfg.PolicyDir, lopts...)
		if err != nil {
			return nil, fmt.Errorf("loading the policy: %w", err)
		}
		a.closers = append(a.closers, live.Close)
		a.Policy, decider = live, live
	}
	var sopts []scs.Option
	if cfg.OPAFallbackLocal {
		sopts = append(sopts, scs.WithFallback(policy.LocalRules{}))
	}
	switch cfg.DecisionLog {
	case "":
	case "stdout":
		sopts = append(sopts, scs.WithDecisionLog(scs.NewJSONLog(os.Stdout, logWriteError(o))))
	default:
		f, err := os.OpenFile(cfg.DecisionLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("SCS_DECISION_LOG: %w", err)
		}
		a.closers = append(a.closers, f.Close)
		sopts = append(sopts, scs.WithDecisionLog(scs.NewJSONLog(f, logWriteError(o))))
	}
	return scs.New(decider, counter, sopts...), nil
}

func logWriteError(o options) func(error) {
	return func(err error) { o.log.Error("decision log", "error", err) }
}

// Both policies must hand the slicer one snapshot per request; a change of
// signature would otherwise silently turn snapshots (and the decision
// cache in them) off.
var (
	_ scs.Snapshotter = (*policy.Live)(nil)
	_ scs.Snapshotter = (*policy.Remote)(nil)
)
