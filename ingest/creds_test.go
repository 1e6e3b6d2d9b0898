package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/policy"
)

// TestIngestFlagsCredentialFiles: every item of a file holding a
// credential (by name or content) is ingested with hasCredentials, and
// the default policy gives none of them to a caller without clearance;
// an ordinary file's items are not flagged and are given. In skip mode the
// same files are left out.
func TestIngestFlagsCredentialFiles(t *testing.T) {
	ctx := context.Background()
	cases := ingest.CredentialCases()
	const plain = "docs/guide.md"
	for _, mode := range []string{ingest.CredentialsFlag, ingest.CredentialsSkip} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			root := t.TempDir()
			for p, content := range cases {
				write(t, root, p, content)
			}
			write(t, root, plain, "# Guide\n\nThe slicer enforces the token budget in rank order.\n")
			in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root), ingest.WithCredentialMode(mode))
			p := run(t, in, ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{})
			engine, err := policy.New(ctx)
			if err != nil {
				t.Fatal(err)
			}
			public := h4r.Specialist{Type: "specialist", ID: "public", SecurityLevel: h4r.Public, AuthorizedGroups: []string{}}
			seen := map[string]bool{}
			err = e.store.Each(ctx, func(it *h4r.Item) error {
				pth, _ := it.Metadata.Extra["path"].(string)
				seen[pth] = true
				_, secret := cases[pth]
				if it.Metadata.HasCredentials != secret {
					t.Errorf("%s (%s): hasCredentials = %v, want %v", it.ID, pth, it.Metadata.HasCredentials, secret)
				}
				d, err := engine.Decide(ctx, public, it)
				if err != nil {
					return err
				}
				if d.Allow == secret {
					t.Errorf("%s (%s): the default policy allows = %v for a public caller", it.ID, pth, d.Allow)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			skips := issuesOf(p.Skips)
			for pth := range cases {
				switch {
				case mode == ingest.CredentialsFlag && !seen[pth]:
					t.Errorf("%s was not ingested (skips: %q)", pth, skips[pth])
				case mode == ingest.CredentialsSkip && (seen[pth] || skips[pth] == ""):
					t.Errorf("%s: ingested %v, skip %q; want skipped", pth, seen[pth], skips[pth])
				}
			}
			if !seen[plain] {
				t.Errorf("%s was not ingested", plain)
			}
		})
	}
}

// TestIngestRechecksUnchangedFilesWhenRulesChange: a file ingested by a
// version that did not see its secret is not read again while unchanged,
// unless the credential rules changed since: then the next run reads it,
// finds the secret and rewrites its items flagged, once.
func TestIngestRechecksUnchangedFilesWhenRulesChange(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root := t.TempDir()
	const secretPath = "conf/config.txt"
	write(t, root, secretPath, ingest.CredentialCases()[secretPath])
	write(t, root, "docs/guide.md", "# Guide\n\nThe slicer enforces the token budget in rank order.\n")
	src := ingest.Source{Type: ingest.TypeFS, Path: root}
	flagged := func() (n int) {
		t.Helper()
		err := e.store.Each(ctx, func(it *h4r.Item) error {
			if it.Metadata.HasCredentials {
				if it.Metadata.Extra["path"] != secretPath {
					t.Errorf("%s is flagged", it.ID)
				}
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	before := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	ingest.UseNameRulesOnly(before)
	if p := run(t, before, src, ingest.Options{}); p.FilesChanged != 2 || flagged() != 0 {
		t.Fatalf("with names only: %+v, %d flagged", p, flagged())
	}
	if p := run(t, before, src, ingest.Options{}); p.FilesUnchanged != 2 {
		t.Fatalf("unchanged with the same rules: %+v", p)
	}

	now := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	p := run(t, now, src, ingest.Options{})
	if p.FilesChanged != 1 || p.FilesUnchanged != 1 {
		t.Errorf("after the rules changed: %+v, want the secret's file rewritten and the guide unchanged", p)
	}
	if n := flagged(); n < 2 {
		t.Errorf("after the rules changed, %d items flagged; want the document and its chunks", n)
	}
	if p := run(t, now, src, ingest.Options{}); p.FilesUnchanged != 2 || p.FilesChanged != 0 {
		t.Errorf("the run after: %+v, want nothing read again", p)
	}
}

// TestLinkedKeyAndTruncatedKeyAreFlagged: a symlink inside the root with
// an ordinary name, pointing at a key file, is judged by its target's name
// too; and a file holding a private key's armour line is a credential
// even when no real key body follows it.
func TestLinkedKeyAndTruncatedKeyAreFlagged(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root := t.TempDir()
	write(t, root, "keys/deploy.pem", "-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n-----END PRIVATE KEY-----\n")
	write(t, root, "notes/rotation.txt", "Rotate yearly.\n-----BEGIN OPENSSH PRIVATE KEY-----\nredacted\n-----END OPENSSH PRIVATE KEY-----\n")
	write(t, root, "docs/guide.md", "# Guide\n\nKeys are rotated yearly.\n")
	if err := os.Symlink(filepath.Join(root, "keys", "deploy.pem"), filepath.Join(root, "docs", "deploy-notes.md")); err != nil {
		t.Fatal(err)
	}
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	run(t, in, ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{})
	want := map[string]bool{"keys/deploy.pem": true, "docs/deploy-notes.md": true, "notes/rotation.txt": true, "docs/guide.md": false}
	seen := map[string]bool{}
	err := e.store.Each(ctx, func(it *h4r.Item) error {
		pth, _ := it.Metadata.Extra["path"].(string)
		w, ok := want[pth]
		if !ok {
			return nil
		}
		seen[pth] = true
		if it.Metadata.HasCredentials != w {
			t.Errorf("%s (%s): hasCredentials = %v, want %v", it.ID, pth, it.Metadata.HasCredentials, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pth := range want {
		if !seen[pth] {
			t.Errorf("%s was not ingested", pth)
		}
	}
}
