package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/h4r/h4r/auth"
)

const keysUsage = `Usage:
  h4r keys hash    read an API key from standard input, print its SHA-256 hash
                   as the sha256 of a keys-file entry (H4R_API_KEYS_FILE)

Example:
  printf %s "$KEY" | h4r keys hash
`

// maxKeyBytes bounds what keys hash reads: a key is a few dozen bytes.
const maxKeyBytes = 4096

// cmdKeys runs the API key commands.
func cmdKeys(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		io.WriteString(stderr, keysUsage)
		return usageError{"keys needs a subcommand: hash"}
	}
	switch args[0] {
	case "hash":
		return cmdKeysHash(args[1:], stdin, stdout, stderr)
	case "help", "-h", "--help":
		io.WriteString(stdout, keysUsage)
		return nil
	}
	io.WriteString(stderr, keysUsage)
	return usageError{fmt.Sprintf("unknown keys subcommand %q", args[0])}
}

// cmdKeysHash prints the hash the keys file stores for the key on stdin.
// The key is read from stdin, never from an argument, so that it stays out
// of the shell history and the process list. Surrounding white space (the
// newline echo adds) is dropped, as the server drops it from the
// Authorization header.
func cmdKeysHash(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("keys hash", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "keys hash < KEY\n\nReads an API key from standard input and prints the hex SHA-256 that the\nkeys file (H4R_API_KEYS_FILE) stores as the key's \"sha256\".\n\nExample: printf %s \"$KEY\" | h4r keys hash")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{"keys hash reads the key from standard input, not from an argument (it would stay in the shell history)"}
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxKeyBytes+1))
	if err != nil {
		return fmt.Errorf("reading the key from standard input: %w", err)
	}
	if len(raw) > maxKeyBytes {
		return usageError{fmt.Sprintf("keys hash: standard input holds more than %d bytes; want one API key", maxKeyBytes)}
	}
	key := strings.TrimSpace(string(raw))
	switch {
	case key == "":
		return usageError{"keys hash: standard input holds no key"}
	case strings.ContainsAny(key, " \t\r\n"):
		return usageError{"keys hash: the key holds white space; want one API key on standard input"}
	}
	fmt.Fprintln(stdout, auth.Hash(key))
	return nil
}
