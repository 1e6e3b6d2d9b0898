package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// maxReportedLines caps how many bad lines ingest lists before giving up.
const maxReportedLines = 20

// cmdIngest loads a JSONL file (one item per line, "-" for stdin). Every
// line is decoded and validated before anything is written, so a file with a
// bad line writes nothing; then items are written in batches, each in one
// transaction, with a progress line.
func cmdIngest(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `ingest FILE.jsonl|- [flags]`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	batch := fs.Int("batch", 500, "items per transaction")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"ingest takes one FILE.jsonl (or - for standard input)"}
	}
	if *batch <= 0 {
		return usageError{"--batch must be positive"}
	}
	in := stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("opening %s: %w", pos[0], err)
		}
		defer f.Close()
		in = f
	}
	items, err := readJSONL(in, pos[0], stderr)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return fmt.Errorf("%s holds no items", pos[0])
	}

	a, err := openApp(ctx, cfg, app.WithLogger(cfg.Logger(stderr)))
	if err != nil {
		return err
	}
	defer a.Close()
	written := 0
	for start := 0; start < len(items); start += *batch {
		end := min(start+*batch, len(items))
		if _, err := a.Store.Upsert(ctx, items[start:end]); err != nil {
			return fmt.Errorf("writing items %d–%d (lines of the file in the same order); %d items before them were written: %w", start+1, end, written, err)
		}
		written = end
		fmt.Fprintf(stderr, "\ringested %d/%d items", written, len(items))
	}
	fmt.Fprintln(stderr)
	fmt.Fprintf(stdout, "ingested %d items from %s into %s\n", written, pos[0], cfg.DataDir)
	return nil
}

// readJSONL decodes and validates every line; it reports up to
// maxReportedLines bad lines, each with its number, and fails if any.
func readJSONL(r io.Reader, name string, stderr io.Writer) ([]h4r.Item, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), h4r.MaxItemBytes+1)
	var items []h4r.Item
	bad := 0
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var it h4r.Item
		err := jsonstrict.Decode(text, &it, "")
		if err == nil {
			err = it.Validate("")
		}
		if err != nil {
			bad++
			if bad <= maxReportedLines {
				fmt.Fprintf(stderr, "%s:%d: %v\n", name, line, err)
			}
			continue
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line is longer than %d bytes", name, line+1, h4r.MaxItemBytes)
		}
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if bad > 0 {
		return nil, fmt.Errorf("%s: %d bad line(s); nothing was written", name, bad)
	}
	return items, nil
}
