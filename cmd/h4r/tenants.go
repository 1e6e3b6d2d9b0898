package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/tenant"
)

const tenantsUsage = `Usage:
  h4r tenants list                     the tenants of H4R_TENANTS_FILE, default first
  h4r tenants create NAME [flags]      make a tenant's store namespace and list it
  h4r tenants delete NAME --yes        remove everything the tenant owned, and unlist it

A running h4r serve picks up a created or deleted tenant when restarted.
`

// cmdTenants runs the tenant administration commands.
func cmdTenants(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	if len(args) == 0 {
		io.WriteString(stderr, tenantsUsage)
		return usageError{"tenants needs a subcommand: list, create or delete"}
	}
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "list", "create", "delete":
	case "help", "-h", "--help":
		io.WriteString(stdout, tenantsUsage)
		return nil
	default:
		io.WriteString(stderr, tenantsUsage)
		return usageError{fmt.Sprintf("unknown tenants subcommand %q", args[0])}
	}
	fs := flag.NewFlagSet("tenants "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "tenants "+args[0]+" [NAME] [flags]")
	fs.StringVar(&cfg.TenantsFile, "tenants-file", cfg.TenantsFile, "the tenants file (H4R_TENANTS_FILE)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	var spec tenant.Spec
	yes := fs.Bool("yes", false, "delete: confirm that everything the tenant owned is to be removed")
	if args[0] == "create" {
		fs.IntVar(&spec.MaxItems, "max-items", 0, "items the tenant may hold (0: unlimited)")
		fs.Int64Var(&spec.MaxBytes, "max-bytes", 0, "bytes of item text and content the tenant may hold (0: unlimited)")
		fs.IntVar(&spec.RequestsPerMinute, "requests-per-minute", 0, "requests per minute across the tenant's keys (0: unlimited)")
		fs.StringVar(&spec.PolicyDir, "policy-dir", "", "the tenant's own Rego policy directory (empty: the default tenant's policy)")
		fs.StringVar(&spec.WebhookSecretFile, "webhook-secret-file", "", "file holding the tenant's GitHub webhook secret (empty: its webhook refuses deliveries)")
		fs.StringVar(&spec.IngestRoots, "ingest-roots", "", "comma-separated folders POST /ingest may read the tenant's local sources from (empty: none)")
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if cfg.TenantsFile == "" {
		return usageError{"tenants needs H4R_TENANTS_FILE or --tenants-file"}
	}
	reg, err := tenant.Load(cfg.TenantsFile)
	if err != nil {
		return err
	}
	if args[0] == "list" {
		if len(pos) != 0 {
			return usageError{"tenants list takes no arguments"}
		}
		fmt.Fprintln(stdout, tenant.Default)
		for _, s := range reg.Specs() {
			fmt.Fprintln(stdout, s.Name)
		}
		return nil
	}
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("tenants %s takes one tenant name", args[0])}
	}
	spec.Name = pos[0]
	if args[0] == "create" {
		if err := reg.Add(spec); err != nil {
			return err
		}
		if err := tenant.Create(ctx, cfg, spec); err != nil {
			return fmt.Errorf("%w (it is listed in %s: run create again after fixing the cause, or delete it)", err, cfg.TenantsFile)
		}
		fmt.Fprintf(stdout, "created tenant %s; restart h4r serve to serve it\n", spec.Name)
		return nil
	}
	listed, ok := reg.Lookup(spec.Name)
	if !ok || spec.Name == tenant.Default {
		return usageError{fmt.Sprintf("no tenant %q in %s to delete", spec.Name, cfg.TenantsFile)}
	}
	if !*yes {
		return usageError{fmt.Sprintf("tenants delete removes every item tenant %s owned: add --yes to confirm", spec.Name)}
	}
	removed, err := tenant.Delete(ctx, cfg, listed)
	if err != nil {
		return err
	}
	if err := reg.Remove(spec.Name); err != nil {
		return err
	}
	b, err := json.Marshal(struct {
		Tenant string `json:"tenant"`
		tenant.Removed
	}{spec.Name, removed})
	if err != nil {
		return fmt.Errorf("encoding what was removed: %w", err)
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}

// openApp opens the service of the tenant H4R_TENANT names (the default
// tenant's unless it says otherwise), for the commands that act on one.
func openApp(ctx context.Context, cfg config.Config, opts ...app.Option) (*app.App, error) {
	tcfg, spec, err := tenantConfig(cfg)
	if err != nil {
		return nil, err
	}
	if q := tenant.NewQuota(spec); q != nil {
		opts = append(opts, app.WithWriteGuard(q))
	}
	return app.Open(ctx, tcfg, opts...)
}

// tenantConfig derives the configuration of H4R_TENANT's tenant.
func tenantConfig(cfg config.Config) (config.Config, tenant.Spec, error) {
	if cfg.Tenant == "" || cfg.Tenant == tenant.Default {
		return cfg, tenant.Spec{Name: tenant.Default}, nil
	}
	if cfg.TenantsFile == "" {
		return cfg, tenant.Spec{}, fmt.Errorf("H4R_TENANT=%s needs H4R_TENANTS_FILE, the file that lists it", cfg.Tenant)
	}
	reg, err := tenant.Load(cfg.TenantsFile)
	if err != nil {
		return cfg, tenant.Spec{}, err
	}
	spec, ok := reg.Lookup(cfg.Tenant)
	if !ok {
		return cfg, tenant.Spec{}, fmt.Errorf("H4R_TENANT=%s: %s lists no such tenant (h4r tenants list)", cfg.Tenant, cfg.TenantsFile)
	}
	tcfg, err := tenant.Config(cfg, spec)
	return tcfg, spec, err
}
