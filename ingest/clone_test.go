package ingest_test

import (
	"context"
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
)

// gitHTTPServer serves the repositories under dir over git's smart HTTP
// protocol with the real git http-backend, on loopback.
func gitHTTPServer(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: no http-backend to clone from")
	}
	srv := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(srv.Close)
	return srv
}

// TestIngestGitCloneURL: a clone URL on a private or loopback address is
// refused, as a url source's is, unless private addresses are allowed; a
// name resolving to loopback is refused too; file, ssh and git URLs are
// never cloned (file:// would read a repository outside the ingest roots).
func TestIngestGitCloneURL(t *testing.T) {
	e := newEnv(t)
	root, _ := newRepo(t)
	srv := gitHTTPServer(t, filepath.Dir(root))
	cloneURL := srv.URL + "/" + filepath.Base(root) + "/.git"
	localhostURL := strings.Replace(cloneURL, "127.0.0.1", "localhost", 1)
	ctx := context.Background()
	refused := ingest.New(e.store, e.index, e.split)
	for _, tc := range []struct {
		name, uri, code, says string
	}{
		{"loopback address", cloneURL, h4r.EFORBIDDEN, "private, loopback or link-local"},
		{"name resolving to loopback", localhostURL, h4r.EFORBIDDEN, "private, loopback or link-local"},
		{"private address", "http://10.1.2.3/org/repo.git", h4r.EFORBIDDEN, "private, loopback or link-local"},
		{"link-local address", "http://[fe80::1]/repo.git", h4r.EFORBIDDEN, "private, loopback or link-local"},
		{"file URL", "file://" + root, h4r.EINVALID, "not an http or https clone URL"},
		{"ssh URL", "ssh://git@example.com/org/repo.git", h4r.EINVALID, "not an http or https clone URL"},
		{"git URL", "git://example.com/org/repo.git", h4r.EINVALID, "not an http or https clone URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refused.Run(ctx, ingest.Source{Type: ingest.TypeGit, URI: tc.uri}, ingest.Options{}, &jobs.Progress{}, func(jobs.Progress) {})
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != tc.code || herr.Field != "uri" || !strings.Contains(herr.Message, tc.says) {
				t.Fatalf("err = %v, want %s on uri saying %q", err, tc.code, tc.says)
			}
		})
	}

	allowed := ingest.New(e.store, e.index, e.split, ingest.WithPrivateURLs(true))
	p := run(t, allowed, ingest.Source{Type: ingest.TypeGit, URI: cloneURL}, ingest.Options{})
	if p.FilesChanged != 5 || len(p.Errors) != 0 {
		t.Fatalf("clone with private addresses allowed: %+v", p)
	}
	var got []string
	_ = e.store.Each(ctx, func(it *h4r.Item) error {
		if it.Kind == ingest.KindDocument {
			got = append(got, it.Metadata.Extra["path"].(string))
		}
		return nil
	})
	if len(got) != 5 {
		t.Errorf("documents of the clone: %v", got)
	}
}
