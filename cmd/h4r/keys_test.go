package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r/auth"
)

// TestKeysHash: h4r keys hash prints the hash the keys file stores, so
// that a keys file written with it authenticates the key. The keys-file
// error message used to recommend this command before it existed.
func TestKeysHash(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		key   string // "" for a usage error
	}{
		{"a key", "s3cret-key", nil, "s3cret-key"},
		{"a key with echo's newline", "s3cret-key\n", nil, "s3cret-key"},
		{"a key with CRLF and spaces", "  s3cret-key\r\n", nil, "s3cret-key"},
		{"no key", "", nil, ""},
		{"only white space", " \n", nil, ""},
		{"two keys", "a b\n", nil, ""},
		{"a key as an argument", "", []string{"s3cret-key"}, ""},
		{"too long", strings.Repeat("k", maxKeyBytes+1), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"keys", "hash"}, tt.args...), strings.NewReader(tt.stdin), &stdout, &stderr, env(nil))
			if tt.key == "" {
				var u usageError
				if !errors.As(err, &u) || exitCode(err) != 2 || stdout.Len() != 0 {
					t.Fatalf("error %v (exit %d), output %q; want a usage error and no output", err, exitCode(err), stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			hash := strings.TrimSuffix(stdout.String(), "\n")
			if hash != auth.Hash(tt.key) || !strings.HasSuffix(stdout.String(), "\n") {
				t.Fatalf("printed %q, want the key's hash on one line", stdout.String())
			}
			keys, err := auth.Parse([]byte(`[{"sha256": "` + hash + `", "principal": {"id": "bot"}, "routes": ["read"]}]`))
			if err != nil {
				t.Fatalf("a keys file with the printed hash: %v", err)
			}
			if _, ok := keys.Authenticate(tt.key); !ok {
				t.Error("the key does not authenticate against the printed hash")
			}
		})
	}
}

// TestKeysFileErrorNamesARealCommand: the keys-file error for a key pasted
// where its hash belongs recommends h4r keys hash, which now exists.
func TestKeysFileErrorNamesARealCommand(t *testing.T) {
	_, err := auth.Parse([]byte(`[{"sha256": "s3cret-key", "principal": {"id": "bot"}, "routes": ["read"]}]`))
	if err == nil || !strings.Contains(err.Error(), "h4r keys hash") {
		t.Fatalf("error %v, want it to recommend h4r keys hash", err)
	}
	var stdout bytes.Buffer
	if err := run(t.Context(), []string{"keys", "hash"}, strings.NewReader("k"), &stdout, &bytes.Buffer{}, env(nil)); err != nil {
		t.Fatalf("the recommended command fails: %v", err)
	}
}
