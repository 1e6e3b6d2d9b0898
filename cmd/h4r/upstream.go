package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/mcptools"
)

// upstreamConnectTimeout bounds connecting to the upstream MCP server and
// listing its tools at start.
const upstreamConnectTimeout = 10 * time.Second

// addUpstream connects to the MCP server H4R_MCP_UPSTREAM_URL (or
// H4R_MCP_UPSTREAM_COMMAND) names and re-exposes its tools in r, their
// results enriched by the context bridge b (nil: passed through). The
// session is closed with the app. Without either variable it does nothing.
func addUpstream(ctx context.Context, cfg config.Config, a *app.App, r *mcptools.Registry, b *bridge.Bridge, log *slog.Logger) error {
	var t mcp.Transport
	switch {
	case cfg.MCPUpstreamURL != "":
		t = &mcp.StreamableClientTransport{Endpoint: cfg.MCPUpstreamURL}
	case strings.TrimSpace(cfg.MCPUpstreamCommand) != "":
		argv := strings.Fields(cfg.MCPUpstreamCommand)
		t = &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}
	default:
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamConnectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "h4r", Version: versionLine()}, nil)
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connecting to the upstream MCP server: %w", err)
	}
	opts := mcptools.UpstreamOptions{Prefix: cfg.MCPUpstreamPrefix}
	if b != nil {
		opts.Bridge = b
	}
	names, err := mcptools.AddUpstream(ctx, r, session, opts)
	if err != nil {
		_ = session.Close()
		return err
	}
	a.OnClose(session.Close)
	log.Info("re-exposing the upstream MCP server's tools", "tools", len(names), "prefix", cfg.MCPUpstreamPrefix, "enriched", b != nil && b.Enabled())
	return nil
}
