package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/store/sqlite"
)

// cmdBackup writes a consistent copy of the embedded store while a server
// may be serving from it (SQLite's VACUUM INTO reads one snapshot). A
// Postgres store is backed up with Postgres's own tools (pg_dump, or a
// base backup with WAL archiving); docs/operations.md says how.
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `backup FILE [--data-dir DIR]   a consistent copy of the embedded store, taken while it serves`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"backup takes one file to write, e.g. h4r backup /backups/h4r-$(date +%F).db"}
	}
	if cfg.DatabaseURL != "" {
		return usageError{"backup copies the embedded store; with DATABASE_URL set, back up Postgres with pg_dump (docs/operations.md)"}
	}
	if _, err := os.Stat(cfg.SQLitePath()); err != nil {
		return fmt.Errorf("no embedded store to back up at %s: %w", cfg.SQLitePath(), err)
	}
	st, err := sqlite.Open(ctx, cfg.SQLitePath(), sqlite.WithLogger(cfg.Logger(io.Discard)))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Backup(ctx, pos[0]); err != nil {
		return err
	}
	info, err := os.Stat(pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes)\n", cfg.SQLitePath(), pos[0], info.Size())
	return nil
}
