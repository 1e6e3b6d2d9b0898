package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
)

// PolicyReporter reports the policy that decides (app.Policy:
// policy.Live, or policy.Remote for a remote OPA).
type PolicyReporter interface {
	Status() h4r.PolicyStatus
}

// pinger is a policy that lives elsewhere and can be asked whether it
// answers (policy.Remote).
type pinger interface {
	Ping(ctx context.Context) error
}

// Readiness values of the policy in /health/ready.
const (
	PolicyReady        = "ok"
	PolicyReloadFailed = "reload_failed"
)

// WithPolicy serves p's status at GET /v1/policy (admin keys) and reports
// it in /health/ready: "ok", or "reload_failed" while a refused reload
// keeps the previous policy deciding. A refused reload does not make the
// server unready — the previous policy still decides, and a bad policy file
// on a shared volume must not take every replica out. A remote OPA is also
// a readiness check ("opa"): without it every item fails closed.
func WithPolicy(p PolicyReporter) Option {
	return func(s *Server) {
		s.policy = p
		if pg, ok := p.(pinger); ok {
			s.checks = append(s.checks, readinessCheck{"opa", pg.Ping})
		}
	}
}

// getPolicy answers GET /v1/policy: mode, source, revision, when it was
// loaded, whether it is watched, the last refused reload, cache counters.
func (s *Server) getPolicy(c *echo.Context) error {
	if s.policy == nil {
		return h4r.Errorf(h4r.ENOTFOUND, "", "this server was started without a policy reporter")
	}
	return c.JSON(http.StatusOK, s.policy.Status())
}

// policyReadiness is the policy's entry in /health/ready.
func (s *Server) policyReadiness() string {
	if s.policy.Status().LastError != "" {
		return PolicyReloadFailed
	}
	return PolicyReady
}
