package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/store/postgres"
)

// cmdMigrate applies the Postgres store's schema migrations (DATABASE_URL)
// and says which version the schema went from and to. `h4r serve` applies
// them at start as well; this command lets a deployment migrate once,
// before rolling out replicas, with a role that may create tables while
// the service's role may only read and write them. With
// --refresh-impacts it also recomputes the BM25 impacts with the current
// average item length, which large stores should do after their items
// have grown or shrunk on average.
func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `migrate [flags]`)
	refresh := fs.Bool("refresh-impacts", false, "recompute BM25 impacts with the current average item length")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{"migrate takes no arguments"}
	}
	if cfg.DatabaseURL == "" {
		return usageError{"migrate needs DATABASE_URL (the embedded SQLite store migrates itself when opened)"}
	}
	log := cfg.Logger(stderr)
	from, to, err := postgres.Migrate(ctx, cfg.DatabaseURL, postgres.WithLogger(log))
	if err != nil {
		return err
	}
	if from == to {
		fmt.Fprintf(stdout, "schema already at version %d\n", to)
	} else {
		fmt.Fprintf(stdout, "schema migrated from version %d to %d\n", from, to)
	}
	if !*refresh {
		return nil
	}
	s, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithLogger(log))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.RefreshImpacts(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "BM25 impacts recomputed")
	return nil
}
