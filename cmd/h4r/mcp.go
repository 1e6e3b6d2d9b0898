package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/mcptools"
	"github.com/h4r/h4r/tenant"
	"github.com/h4r/h4r/trace"
)

// cmdMCP serves the MCP tools over stdio (stdin, stdout) for a desktop
// agent, answering for H4R_MCP_API_KEY's principal. Logs go to stderr:
// stdout carries only the protocol.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `mcp [flags]   (serves MCP over stdin/stdout; configure it as a stdio server of the agent)`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files replacing the bundled policy (SCS_POLICY_DIR)")
	fs.StringVar(&cfg.APIKeysFile, "api-keys-file", cfg.APIKeysFile, "file of API keys (SHA-256 hashes) and their principals (H4R_API_KEYS_FILE)")
	withDemo := fs.Bool("demo", false, "load the bundled example corpus when the store is empty")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("mcp takes no arguments, got %q", fs.Args())}
	}
	caller, err := mcpCaller(cfg)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	defer tuneGC(ctx, cfg, log)()
	a, err := openApp(ctx, cfg, app.WithLogger(log))
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Error("closing the store", "error", err)
		}
	}()
	if *withDemo {
		if err := loadDemo(ctx, a, log); err != nil {
			return err
		}
	}
	log.Info("serving MCP on stdio", "specialist", caller.Specialist.ID, "securityLevel", caller.Specialist.SecurityLevel.String())
	b, err := a.Bridge(log)
	if err != nil {
		log.Error("the context bridge is off: it could not be built", "error", err)
		b = nil
	}
	return mcpRegistry(ctx, cfg, a, b, log).Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}, caller)
}

// mcpCaller is whom h4r mcp answers for: H4R_MCP_API_KEY's principal in
// the keys file, or the anonymous public specialist allowed read and
// ingest tools.
func mcpCaller(cfg config.Config) (mcptools.Caller, error) {
	if cfg.MCPAPIKey == "" {
		return mcptools.CallerOf(&auth.Principal{Specialist: h4r.Anonymous(), Routes: []auth.Route{auth.RouteRead, auth.RouteIngest}}), nil
	}
	if cfg.APIKeysFile == "" {
		return mcptools.Caller{}, h4r.Errorf(h4r.EINVALID, "H4R_MCP_API_KEY", "is set but H4R_API_KEYS_FILE is not: the key's principal is read from the keys file")
	}
	keys, err := auth.Load(cfg.APIKeysFile)
	if err != nil {
		return mcptools.Caller{}, err
	}
	p, ok := keys.Authenticate(cfg.MCPAPIKey)
	if !ok {
		return mcptools.Caller{}, h4r.Errorf(h4r.EINVALID, "H4R_MCP_API_KEY", "is not a key of H4R_API_KEYS_FILE (%s)", cfg.APIKeysFile)
	}
	if want := cmp.Or(cfg.Tenant, tenant.Default); !p.Operator && tenant.Of(p) != want {
		return mcptools.Caller{}, h4r.Errorf(h4r.EINVALID, "H4R_MCP_API_KEY", "belongs to tenant %s, and h4r mcp would serve tenant %s (H4R_TENANT)", tenant.Of(p), want)
	}
	return mcptools.CallerOf(p), nil
}

// mcpRegistry is the MCP tools of a, for h4r mcp and for /mcp;
// context_bridge when b is not nil (it answers without context_bridge
// while H4R_BRIDGE_ENABLED is false).
// An upstream MCP server (H4R_MCP_UPSTREAM_URL or _COMMAND) that cannot
// be reached is logged and left out: H4R's own tools are served.
func mcpRegistry(ctx context.Context, cfg config.Config, a *app.App, b *bridge.Bridge, log *slog.Logger) *mcptools.Registry {
	r := mcptools.NewRegistry("h4r", versionLine())
	mcptools.Standard(r, mcptools.Deps{
		Packer: a.Engine, Memory: a.Memory, Items: a.Store.Count, Timeout: cfg.RequestTimeout,
		Policy: func() any { return a.Policy.Status() },
	})
	if svc := a.RAG(); svc != nil {
		mcptools.AddRAG(r, svc, cfg.RequestTimeout)
	}
	// Searching traces needs no NATS: a search-only trace service.
	mcptools.AddTraces(r, trace.NewService(a.Store, trace.WithSearch(a.Engine, a.Slicer)), a.Decisions)
	if b != nil {
		mcptools.AddBridge(r, b)
	}
	if err := addUpstream(ctx, cfg, a, r, b, log); err != nil {
		log.Error("the upstream MCP server's tools are not served", "error", err)
	}
	return r
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
