package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/tokens"
)

// newSlicer loads the policy the configuration selects (bundled, or
// SCS_POLICY_DIR) and returns the slicer that applies it.
func newSlicer(ctx context.Context, cfg config.Config, a *App, counter *tokens.Counter, o options) (*scs.Slicer, error) {
	if cfg.OPAURL != "" {
		return nil, notBuiltYet("SCS_OPA_URL", "remote OPA")
	}
	var popts []policy.Option
	if cfg.PolicyDir != "" {
		popts = append(popts, policy.WithPolicyDir(cfg.PolicyDir))
	}
	pol, err := policy.New(ctx, popts...)
	if err != nil {
		return nil, fmt.Errorf("loading the policy: %w", err)
	}
	a.Policy = pol
	var sopts []scs.Option
	if cfg.OPAFallbackLocal {
		sopts = append(sopts, scs.WithFallback(policy.LocalRules{}))
	}
	return scs.New(pol, counter, sopts...), nil
}
