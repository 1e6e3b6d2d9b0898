package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
)

const usage = `h4r — a context engine for AI agents

Usage:
  h4r serve  [--addr HOST:PORT] [--data-dir DIR] [--policy-dir DIR] [--demo]
  h4r pack   "query" [--specialist ID] [--level public|internal|confidential|restricted]
             [--groups a,b] [--type hybrid] [--limit N] [--max-tokens N] [--json] [--data-dir DIR] [--demo]
  h4r ingest FILE.jsonl|- [--data-dir DIR] [--batch N]
  h4r query  --preset NAME [--epic ID] [--file PATH] [--pattern ID] [--status S] [--json]
             decision-trace presets: decision_traces_by_precedent, file_assignment_history,
             review_decisions, review_decisions_rejected, decisions_by_pattern, decisions_by_epic
  h4r mcp    [--data-dir DIR] [--demo]           serve the MCP tools over stdio (H4R_MCP_API_KEY's principal)
  h4r ingest-source PATH|URL [--type git|fs|url|doc] [--ref REF] [--rechunk] [--data-dir DIR]
  h4r reindex [--graph] [--data-dir DIR]        rebuild the vector index (and the Neo4j graph) from the store
  h4r migrate [--refresh-impacts]               apply the Postgres schema migrations (DATABASE_URL)
  h4r policy check|test|eval ...                compile, unit-test or try out a Rego policy (h4r policy help)
  h4r keys hash < KEY                           print the SHA-256 of an API key for the keys file
  h4r tenants list|create|delete [NAME]         administer the tenants of H4R_TENANTS_FILE (h4r tenants help)
  h4r bench  quality|tune|gen|latency [flags]   measure ranking quality and latency, tune weights
  h4r config [--changed] [--json]               the effective configuration, each value's source, secrets masked
  h4r health [--addr HOST:PORT] [--ready]       exit 0 when a running server is live (container health checks)
  h4r backup FILE                               a consistent copy of the embedded store, taken while it serves
  h4r version                                   print the version and the VCS revision
  h4r completion bash|zsh|fish                  print a shell completion script

Every command takes --help.

Configuration: defaults, then the YAML file of --config FILE (or H4R_CONFIG), then the
environment (see .env.example), then flags. h4r config shows the result.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	if err != nil {
		if !isFlagError(err) { // parseFlags has printed it, and the usage
			fmt.Fprintln(os.Stderr, errorText(err, os.Args[1:]))
		}
		os.Exit(exitCode(err))
	}
}

// errorText is what h4r prints for err: the message on a line of its own,
// and for a usage mistake a pointer to the command's help.
func errorText(err error, args []string) string {
	text := "h4r: " + strings.TrimRight(err.Error(), "\n")
	var u usageError
	if errors.As(err, &u) && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		text += "\nRun 'h4r " + args[0] + " --help' for usage."
	}
	return text
}

// exitCode is 2 for usage errors (a flag the command does not know
// included), 1 for everything else.
func exitCode(err error) int {
	var u usageError
	var unknown unknownCommand
	if errors.As(err, &u) || errors.As(err, &unknown) || isFlagError(err) {
		return 2
	}
	return 1
}

// isFlagError reports whether err came from parsing flags.
func isFlagError(err error) bool {
	var f flagError
	return errors.As(err, &f)
}

// flagError is a flag the command could not parse; the flag package has
// already printed the problem and the usage.
type flagError struct{ err error }

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run dispatches a subcommand. It takes its environment as arguments so that
// tests can run the real commands in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"missing subcommand"}
	}
	args, lookupEnv, err := withConfigFlag(args, lookupEnv)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"missing subcommand"}
	}
	err = dispatch(ctx, args, stdin, stdout, stderr, lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		return nil // --help: the usage is printed, and asking for it is no error
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], stderr, lookupEnv, nil)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr, lookupEnv)
	case "pack":
		return cmdPack(ctx, args[1:], stdout, stderr, lookupEnv)
	case "migrate":
		return cmdMigrate(ctx, args[1:], stdout, stderr, lookupEnv)
	case "ingest":
		return cmdIngest(ctx, args[1:], stdin, stdout, stderr, lookupEnv)
	case "query":
		return cmdQuery(ctx, args[1:], stdout, stderr, lookupEnv)
	case "ingest-source":
		return cmdIngestSource(ctx, args[1:], stdout, stderr, lookupEnv)
	case "reindex":
		return cmdReindex(ctx, args[1:], stdout, stderr, lookupEnv)
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr, lookupEnv)
	case "policy":
		return cmdPolicy(ctx, args[1:], stdout, stderr, lookupEnv)
	case "keys":
		return cmdKeys(ctx, args[1:], stdin, stdout, stderr)
	case "tenants":
		return cmdTenants(ctx, args[1:], stdout, stderr, lookupEnv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "--version", "-version":
		return cmdVersion(args[1:], stdout, stderr)
	case "completion":
		return cmdCompletion(args[1:], stdout, stderr)
	case "config":
		return cmdConfig(args[1:], stdout, stderr, lookupEnv)
	case "health":
		return cmdHealth(ctx, args[1:], stdout, stderr, lookupEnv)
	case "backup":
		return cmdBackup(ctx, args[1:], stdout, stderr, lookupEnv)
	}
	return unknownCommand{args[0]}
}

// commands are the subcommands dispatch knows, for the unknown-command
// message and shell completion (TestCommandsAllDispatch keeps the two
// lists equal).
var commands = []string{"serve", "pack", "ingest", "query", "mcp", "ingest-source", "reindex", "migrate",
	"policy", "keys", "tenants", "bench", "config", "health", "backup", "version", "completion", "help"}

// unknownCommand is a first argument that names no command.
type unknownCommand struct{ name string }

func (e unknownCommand) Error() string {
	return fmt.Sprintf("unknown command %q; the commands are: %s (h4r help describes them)", e.name, strings.Join(commands, ", "))
}

// cmdVersion prints the version line; --help says so.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "version   print the version, the VCS revision and the Go version the binary was built with")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("version takes no arguments, got %q", fs.Args())}
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// parseFlags parses args with fs. A flag fs does not know is a flagError
// (the problem and the usage are printed); --help is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	text := buf.String()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		// The flag package names a flag with one dash in its message
		// ("flag provided but not defined: -bogus"); the help and the
		// README write --bogus.
		first, rest, _ := strings.Cut(text, "\n")
		text = "h4r: " + flagInMessage.ReplaceAllString(first, "$1--$2") + "\n" + rest
	}
	if _, werr := io.WriteString(out, text); werr != nil && err == nil {
		return werr
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return flagError{err}
}

// flagInMessage finds the flag named in a message of the flag package:
// "...: -name" or "... for flag -name: ...".
var flagInMessage = regexp.MustCompile(`(: | flag )-([A-Za-z0-9][\w.-]*)`)

// parseInterspersed parses flags that may come before or after positional
// arguments ("h4r pack 'query' --json"), returning the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
