package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/tenant"
	"github.com/h4r/h4r/trace"
)

// cmdServe runs the HTTP API until ctx is cancelled. ready, when not nil,
// receives the bound address once the server accepts connections (tests
// listen on port 0).
func cmdServe(ctx context.Context, args []string, stderr io.Writer, lookupEnv func(string) (string, bool), ready chan<- string) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `serve [flags]`)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address HOST:PORT (H4R_ADDR)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files replacing the bundled policy (SCS_POLICY_DIR)")
	fs.StringVar(&cfg.APIKeysFile, "api-keys-file", cfg.APIKeysFile, "file of API keys (SHA-256 hashes) and their principals (H4R_API_KEYS_FILE)")
	withDemo := fs.Bool("demo", false, "load the bundled example corpus when the store is empty")
	insecure := fs.Bool("insecure", false, "allow a non-loopback --addr without API keys: every caller is then whoever it claims to be")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	// Every record logged while serving a request, the engine's and the
	// store's included, carries the request id.
	log := slog.New(server.LogHandler(cfg.Logger(stderr).Handler()))
	keys, loopback, err := serveSecurity(cfg, *insecure)
	if err != nil {
		return err
	}
	defer tuneGC(ctx, cfg, log)()
	if cfg.DebugAddr != "" {
		// Before the stores open, so that opening and warming them can
		// be profiled too.
		_, stop, err := startDebug(ctx, cfg.DebugAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	svc, err := openService(ctx, cfg, keys, !loopback, *withDemo, log)
	if err != nil {
		if ctx.Err() != nil {
			// A stop asked for while starting (SIGTERM in a rolling
			// restart, Ctrl-C during a long warm-up) is not a failure:
			// opening writes nothing it does not commit whole.
			log.Info("h4r stopped before serving", "why", context.Cause(ctx).Error(), "interrupted", err.Error())
			return nil
		}
		return err
	}
	defer svc.close(log)
	def := svc.stacks[tenant.Default]
	srv := def.api.HTTPServer()
	srv.Handler = svc.handler
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	ln = def.api.Listener(ln)
	logServing(log, cfg, def.a, keys, loopback, ln.Addr().String())
	if len(svc.stacks) > 1 {
		log.Info("serving tenants", "tenants", len(svc.stacks), "tenants_file", cfg.TenantsFile)
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	return serveUntilDone(ctx, srv, ln, cfg.ShutdownGrace, log)
}

// service is what h4r serve serves: a stack per tenant and the handler
// in front of them (the default tenant's server alone without tenants).
type service struct {
	stacks  map[string]*stack
	handler http.Handler
}

func (s *service) close(log *slog.Logger) {
	for _, st := range s.stacks {
		st.close(log)
	}
}

// appOptions are more options for the app.Open of a tenant's stack, by
// the tenant's name (the canary harness stalls the engine's packs).
type appOptions func(tenant string) []app.Option

// openService opens every tenant's stack and, with tenants, the router
// in front of them.
func openService(ctx context.Context, cfg config.Config, keys *auth.Keys, anyHost, withDemo bool, log *slog.Logger, more ...appOptions) (_ *service, err error) {
	specs, err := servedTenants(cfg, keys)
	if err != nil {
		return nil, err
	}
	svc := &service{stacks: map[string]*stack{}}
	defer func() {
		if err != nil {
			svc.close(log)
		}
	}()
	// Servers behind the tenant router share the console's form key: a
	// login form drawn by one is posted to the tenant of the key typed in.
	consoleSecret := make([]byte, 32)
	_, _ = rand.Read(consoleSecret)
	for _, spec := range specs {
		tcfg, err := tenant.Config(cfg, spec)
		if err != nil {
			return nil, err
		}
		tlog := log
		var extra []server.Option
		if len(specs) > 1 {
			tlog = log.With("tenant", spec.Name)
			extra = []server.Option{server.WithAuthenticator(tenant.Scoped(keys, spec.Name)), server.WithConsoleSecret(consoleSecret)}
		}
		var aextra []app.Option
		for _, m := range more {
			aextra = append(aextra, m(spec.Name)...)
		}
		st, err := openStack(ctx, tcfg, spec, keys, anyHost, withDemo && spec.Name == tenant.Default, tlog, aextra, extra...)
		if err != nil {
			if len(specs) > 1 {
				return nil, fmt.Errorf("tenant %s: %w", spec.Name, err)
			}
			return nil, err
		}
		svc.stacks[spec.Name] = st
	}
	svc.handler = svc.stacks[tenant.Default].api.Handler()
	if len(specs) == 1 {
		return svc, nil
	}
	handlers := map[string]http.Handler{}
	ropts := []tenant.RouterOption{tenant.WithRouterLogger(log), tenant.WithSignedRoute("/webhook/github")}
	for _, spec := range specs {
		handlers[spec.Name] = svc.stacks[spec.Name].api.Handler()
		ropts = append(ropts, tenant.WithRequestQuota(spec.Name, spec.RequestsPerMinute))
	}
	if svc.handler, err = tenant.NewRouter(keys, handlers, ropts...); err != nil {
		return nil, err
	}
	return svc, nil
}

// servedTenants lists the tenants h4r serve serves: the default one, and
// with H4R_TENANTS_FILE those it lists, which need API keys.
func servedTenants(cfg config.Config, keys *auth.Keys) ([]tenant.Spec, error) {
	specs := []tenant.Spec{{Name: tenant.Default}}
	if cfg.TenantsFile == "" {
		if keys != nil {
			for _, p := range keys.Principals() {
				if p.Tenant != "" && p.Tenant != tenant.Default {
					// Served by the default tenant's server, the key
					// would reach the default tenant's data.
					return nil, fmt.Errorf("API key %s belongs to tenant %q, and H4R_TENANTS_FILE is not set: set it to serve tenants", p.KeyID, p.Tenant)
				}
			}
		}
		return specs, nil
	}
	if keys == nil {
		return nil, fmt.Errorf("H4R_TENANTS_FILE needs H4R_API_KEYS_FILE: without keys a caller could claim any tenant")
	}
	reg, err := tenant.Load(cfg.TenantsFile)
	if err != nil {
		return nil, err
	}
	return append(specs, reg.Specs()...), nil
}

// stack is one tenant's complete service: the app, its commit traces,
// its jobs and its HTTP server.
type stack struct {
	a   *app.App
	tr  *app.Traces
	jb  *app.Jobs
	api *server.Server
}

// close releases the stack, last opened first: the app's Close flushes
// access counts and the decision log, after the last request that could
// add to them.
func (st *stack) close(log *slog.Logger) {
	if st.jb != nil {
		if err := st.jb.Close(); err != nil {
			log.Error("closing the job store", "error", err)
		}
	}
	if st.tr != nil {
		if err := st.tr.Close(context.Background()); err != nil {
			log.Error("closing the trace consumer", "error", err)
		}
	}
	if err := st.a.Close(); err != nil {
		log.Error("closing the store", "error", err)
	}
}

// openStack opens one tenant's service from its configuration.
func openStack(ctx context.Context, cfg config.Config, spec tenant.Spec, keys *auth.Keys, anyHost, withDemo bool, log *slog.Logger, aextra []app.Option, extra ...server.Option) (_ *stack, err error) {
	// The metrics exist before the app, so that the app's embedder can
	// record into them; the OPA cache counters read the app once it is.
	var a *app.App
	m := metrics.New(metrics.WithOPACache(func() (uint64, uint64) {
		if a == nil {
			return 0, 0
		}
		if st := a.Policy.Status(); st.Cache != nil {
			return st.Cache.Hits, st.Cache.Misses
		}
		return 0, 0
	}), metrics.WithPacksInFlight(func() int {
		if a == nil {
			return 0
		}
		return a.Engine.InFlight()
	}), metrics.WithItemCache(func() metrics.ItemCache {
		if a == nil {
			return metrics.ItemCache{}
		}
		st, _ := a.ItemCacheStats()
		return metrics.ItemCache{Hits: st.Hits, Misses: st.Misses, Items: st.Items, Bytes: st.Bytes, Selective: st.Selective}
	}))
	traceMetrics := trace.NewMetrics(m.Registry())
	aopts := []app.Option{app.WithLogger(log), app.WithEmbeddingObserver(traceMetrics.ObserveEmbedding)}
	if q := tenant.NewQuota(spec); q != nil {
		aopts = append(aopts, app.WithWriteGuard(q))
	}
	a, err = app.Open(ctx, cfg, append(aopts, aextra...)...)
	if err != nil {
		return nil, err
	}
	st := &stack{a: a}
	defer func() {
		if err != nil {
			st.close(log)
		}
	}()
	if withDemo {
		if err := loadDemo(ctx, a, log); err != nil {
			return nil, err
		}
	}
	if st.tr, err = app.OpenTraces(ctx, a, traceMetrics, log); err != nil {
		return nil, err
	}
	if err := st.tr.Start(ctx, log); err != nil {
		return nil, err
	}
	if st.jb, err = app.OpenJobs(ctx, a, log); err != nil {
		return nil, err
	}
	// With NATS, ambient precedents fan out across replicas over it: a
	// trace ingested on one replica (HTTP or the NATS consumer) reaches
	// subscribers on another.
	opts := append(traceOptions(cfg, a, st.tr), server.WithJobs(st.jb))
	st.api = apiServer(cfg, a, keys, anyHost, log, m, st.tr.Fanout, append(opts, extra...)...)
	if resumed, failed, err := st.jb.Runner.Resume(ctx); err != nil {
		log.Error("resuming interrupted jobs", "error", err)
	} else if resumed+failed > 0 {
		log.Info("jobs interrupted by the last stop", "resumed", resumed, "marked_failed", failed)
	}
	return st, nil
}

// serveSecurity loads the API keys, if any, and refuses a non-loopback
// address without them unless insecure.
func serveSecurity(cfg config.Config, insecure bool) (keys *auth.Keys, loopback bool, err error) {
	if cfg.APIKeysFile != "" {
		if keys, err = auth.Load(cfg.APIKeysFile); err != nil {
			return nil, false, fmt.Errorf("H4R_API_KEYS_FILE/--api-keys-file: %w", err)
		}
	}
	if loopback, err = isLoopback(cfg.Addr); err != nil {
		return nil, false, err
	}
	if keys == nil && !loopback && !insecure {
		return nil, false, fmt.Errorf("--addr %s is not a loopback address and no API keys are configured (H4R_API_KEYS_FILE): without keys every caller is whoever it claims to be, so h4r serves only on 127.0.0.1, ::1 or localhost unless --insecure is given", cfg.Addr)
	}
	return keys, loopback, nil
}

// loadDemo loads the bundled example corpus into an empty store.
func loadDemo(ctx context.Context, a *app.App, log *slog.Logger) error {
	n, err := demo.LoadIfEmpty(ctx, a.Store)
	if err != nil {
		return fmt.Errorf("loading the demo corpus: %w", err)
	}
	if n > 0 {
		log.Info("loaded the demo corpus", "items", n)
		// A bulk load: the learned embedder learns from it now rather than
		// at its next drift check.
		if _, err := a.LearnEmbedder(ctx); err != nil && !errors.Is(err, embed.ErrNotLearned) {
			return fmt.Errorf("learning the embedder from the demo corpus: %w", err)
		}
	}
	return nil
}

// apiServer builds the HTTP API: routes, limits, metrics, readiness checks
// and, with keys, authentication. Without keys on a non-loopback address
// (--insecure) it serves any Host, as it is reached by other names.
func apiServer(cfg config.Config, a *app.App, keys *auth.Keys, anyHost bool, log *slog.Logger, m *metrics.Metrics, fanout decision.Fanout, extra ...server.Option) *server.Server {
	b, err := a.Bridge(log)
	if err != nil {
		log.Error("the context bridge is off: it could not be built", "error", err)
		b = nil
	}
	sopts := []server.Option{
		server.WithMaxBodyBytes(cfg.MaxBodyBytes),
		server.WithMaxConnections(cfg.MaxConnections),
		server.WithMaxConnectionsPerAddr(cfg.MaxConnectionsPerAddr),
		server.WithUnauthenticatedBytes(cfg.UnauthenticatedBodyBytes),
		server.WithMaxBatch(cfg.MCPMaxBatch),
		server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithLogger(log),
		server.WithRateLimit(cfg.RateLimitPerMinute),
		server.WithMetrics(m),
		server.WithPolicy(a.Policy),
		server.WithDecisions(a.Decisions),
		server.WithMemory(a.Memory),
		server.WithMCP(mcpRegistry(context.Background(), cfg, a, b, log)),
		server.WithA2A(server.A2AOptions{PublicURL: cfg.A2APublicURL, TaskTTL: cfg.A2ATaskTTL, TaskMax: cfg.A2ATaskMax, TaskMaxBytes: cfg.A2ATaskMaxBytes}),
	}
	// fanout nil: pushes stay within this process (no NATS_URL).
	hub, err := decision.NewHub(a.Decisions, fanout, decision.WithHubLogger(log),
		decision.WithPushThreshold(cfg.AmbientRelevance), decision.WithPushDebounce(cfg.AmbientDebounce),
		decision.WithMaxConnectionsPerSession(cfg.AmbientMaxPerSession), decision.WithMaxConnectionsPerPrincipal(cfg.AmbientMaxPerKey))
	if err != nil {
		log.Error("ambient precedents are off: GET /v1/subscribe is not served", "error", err)
	} else {
		sopts = append(sopts, server.WithAmbient(hub, 0))
	}
	if svc := a.RAG(); svc != nil {
		sopts = append(sopts, server.WithRAG(svc))
	}
	// The console's browsers read through the same slicer as packs.
	browse := server.Browse{Items: a.Store, Slicer: a.Slicer}
	if ph := a.Packs(); ph != nil {
		browse.Packs = ph
	}
	sopts = append(sopts, server.WithBrowse(browse))
	if b != nil {
		sopts = append(sopts, server.WithBridge(b))
	}
	for name, check := range a.Checks {
		sopts = append(sopts, server.WithReadinessCheck(name, check))
	}
	if a.Config.DatabaseURL != "" {
		sopts = append(sopts, server.WithStoreCheckName("postgres"))
	}
	switch {
	case keys != nil:
		sopts = append(sopts, server.WithAuthenticator(keys))
	case anyHost:
		sopts = append(sopts, server.WithAnyHost())
	}
	if keys == nil {
		sopts = append(sopts, server.WithAnonymousAudit(cfg.AnonymousAudit))
	}
	return server.New(a.Engine, a.Store, append(sopts, extra...)...)
}

// traceOptions serve the commit-trace routes, with a nats readiness
// check when the consumer runs.
func traceOptions(cfg config.Config, a *app.App, tr *app.Traces) []server.Option {
	opts := []server.Option{server.WithTraces(tr.Service, server.TraceOptions{
		WebhookSecret: []byte(cfg.GitHubWebhookSecret),
		Vectors:       a.VectorCount,
		DatabaseSize:  a.DatabaseSize(),
	})}
	if tr.Consumer != nil {
		opts = append(opts, server.WithReadinessCheck("nats", tr.Consumer.Health))
	}
	return opts
}

// logServing says at start which mode the server is in.
func logServing(log *slog.Logger, cfg config.Config, a *app.App, keys *auth.Keys, loopback bool, addr string) {
	switch {
	case keys != nil:
		log.Info("h4r serving", "addr", addr, "data_dir", cfg.DataDir,
			"policy", a.Policy.Source(), "policy_revision", a.Policy.Revision(),
			"api_keys", keys.Len(), "rate_limit_per_minute", cfg.RateLimitPerMinute, "max_connections", cfg.MaxConnections)
	case loopback:
		log.Info("h4r serving", "addr", addr, "data_dir", cfg.DataDir,
			"policy", a.Policy.Source(), "policy_revision", a.Policy.Revision(),
			"max_connections", cfg.MaxConnections,
			"note", "no API keys (H4R_API_KEYS_FILE): serving on loopback only (loopback Host and Origin only), and each request's specialist is whoever it claims to be")
	default:
		log.Warn("h4r serving WITHOUT AUTHENTICATION on a non-loopback address (--insecure)", "addr", addr,
			"data_dir", cfg.DataDir, "policy", a.Policy.Source(), "policy_revision", a.Policy.Revision())
	}
}

// serveUntilDone serves on ln until ctx is cancelled, then shuts down:
// no new connections, in-flight requests finished within grace. The
// caller's deferred App.Close then flushes access counts and the decision
// log and closes the stores, after the last request that could add to
// them.
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: no new connections, finishing in-flight requests", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: in-flight requests did not finish within %s: %w", grace, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("in-flight requests finished; closing the stores")
	return nil
}

// isLoopback reports whether addr (host:port) names a loopback host.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("H4R_ADDR/--addr %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback()), nil
}
