package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// oneDash matches a flag listed as -flag rather than --flag.
var oneDash = regexp.MustCompile(`\n\s+-[a-z]`)

// TestHelpExitsZero: --help on every command prints its usage, with flags
// written as the README writes them (--flag), and is no error.
func TestHelpExitsZero(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantText string
	}{
		{"top level", []string{"--help"}, "Usage:"},
		{"serve", []string{"serve", "--help"}, "Usage: h4r serve"},
		{"pack", []string{"pack", "--help"}, "Usage: h4r pack"},
		{"ingest", []string{"ingest", "--help"}, "Usage: h4r ingest"},
		{"reindex", []string{"reindex", "--help"}, "Usage: h4r reindex"},
		{"query", []string{"query", "--help"}, "Usage: h4r query"},
		{"migrate", []string{"migrate", "--help"}, "Usage: h4r migrate"},
		{"policy check", []string{"policy", "check", "--help"}, "Usage: h4r policy check"},
		{"policy test", []string{"policy", "test", "--help"}, "Usage: h4r policy test"},
		{"policy eval", []string{"policy", "eval", "--help"}, "Usage: h4r policy eval"},
		{"keys hash", []string{"keys", "hash", "--help"}, "Usage: h4r keys hash"},
		{"keys", []string{"keys", "--help"}, "h4r keys hash"},
		{"bench quality", []string{"bench", "quality", "--help"}, "Usage: h4r bench quality"},
		{"bench tune", []string{"bench", "tune", "--help"}, "Usage: h4r bench tune"},
		{"bench gen", []string{"bench", "gen", "--help"}, "Usage: h4r bench gen"},
		{"bench latency", []string{"bench", "latency", "--help"}, "Usage: h4r bench latency"},
		{"single dash", []string{"pack", "-h"}, "Usage: h4r pack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr, env(nil))
			if err != nil {
				t.Fatalf("run %q: %v, want no error", tt.args, err)
			}
			out := stdout.String() + stderr.String()
			if !strings.Contains(out, tt.wantText) {
				t.Errorf("output lacks %q:\n%s", tt.wantText, out)
			}
			if oneDash.MatchString(out) {
				t.Errorf("a flag is shown with one dash; the README writes --flag:\n%s", out)
			}
		})
	}
}

// TestVersion: h4r version and h4r --version print the version line.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &stdout, &bytes.Buffer{}, env(nil)); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got := stdout.String(); !strings.HasPrefix(got, "h4r ") || !strings.Contains(got, "revision ") || !strings.HasSuffix(got, "\n") {
			t.Errorf("%q printed %q, want the version and revision on one line", args, got)
		}
	}
}

// TestBenchLatencyAPIRefusesProfiles: a profile flag of the in-process run
// is refused with --api or --url rather than ignored.
func TestBenchLatencyAPIRefusesProfiles(t *testing.T) {
	for _, mode := range [][]string{{"--api"}, nil} {
		for _, flag := range []string{"--cpuprofile", "--memprofile", "--mutexprofile", "--blockprofile"} {
			// Were the flag taken, the run would fail at once on a port
			// nothing listens on (--url), not build and serve stores.
			args := append([]string{"bench", "latency", "--url", "http://127.0.0.1:1", "--sizes", "10", "--requests", "1",
				"--data", t.TempDir(), "--out", t.TempDir(), flag, "x.prof"}, mode...)
			err := run(context.Background(), args, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, env(nil))
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), flag) {
				t.Errorf("%q: %v, want a usage error naming %s", args, err, flag)
			}
		}
	}
}

// TestUsageErrorsEndTheirLine: a usage mistake's message ends with a
// newline before the pointer to the help, never running into it.
func TestUsageErrorsEndTheirLine(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"pack"}, strings.NewReader(""), &bytes.Buffer{}, &stderr, env(nil))
	var u usageError
	if !errors.As(err, &u) || exitCode(err) != 2 {
		t.Fatalf("h4r pack without a query: %v (exit %d), want a usage error (exit 2)", err, exitCode(err))
	}
	text := errorText(err, []string{"pack"})
	lines := strings.Split(text, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "h4r: pack takes one query") || lines[1] != "Run 'h4r pack --help' for usage." {
		t.Errorf("error text %q, want the message on its own line, then the help pointer", text)
	}
	if err := run(context.Background(), []string{"pack", "--no-such-flag"}, strings.NewReader(""), &bytes.Buffer{}, &stderr, env(nil)); !isFlagError(err) || exitCode(err) != 2 {
		t.Errorf("unknown flag: %v (exit %d), want a flag error (exit 2)", err, exitCode(err))
	}
}

// TestFlagErrorsWriteTwoDashes: a flag the command cannot parse is named
// as the help and the README write it (--flag), on an h4r: line before
// the usage, and is a usage error.
func TestFlagErrorsWriteTwoDashes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"pack", "q", "--bogus"}, "h4r: flag provided but not defined: --bogus\nUsage: h4r pack"},
		{"unknown flag with one dash", []string{"ingest", "-bogus"}, "h4r: flag provided but not defined: --bogus\nUsage: h4r ingest"},
		{"missing argument", []string{"pack", "q", "--limit"}, "h4r: flag needs an argument: --limit\nUsage: h4r pack"},
		{"invalid value", []string{"pack", "q", "--limit", "many"}, `h4r: invalid value "many" for flag --limit: parse error`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &bytes.Buffer{}, &stderr, env(nil))
			if !isFlagError(err) || exitCode(err) != 2 {
				t.Errorf("error %v (exit %d), want a flag error (exit 2)", err, exitCode(err))
			}
			if !strings.HasPrefix(stderr.String(), tt.want) {
				t.Errorf("stderr %q, want it to start with %q", stderr.String(), tt.want)
			}
			if oneDash.MatchString(stderr.String()) || strings.Contains(stderr.String(), " -bogus") {
				t.Errorf("a flag is shown with one dash:\n%s", stderr.String())
			}
		})
	}
}
