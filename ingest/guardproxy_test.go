package ingest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// refusePort is a dialer control refusing one port of loopback: it stands
// for a private address, the other loopback servers for public ones.
func refusePort(port string) func(string, string, syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if _, p, _ := net.SplitHostPort(address); p == port {
			return errors.New(address + " is a private, loopback or link-local address (test)")
		}
		return nil
	}
}

func proxiedClient(t *testing.T, g *guardProxy, tlsSrv *httptest.Server) *http.Client {
	t.Helper()
	u, err := url.Parse(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	if tlsSrv != nil {
		tr.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	return &http.Client{Transport: tr}
}

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestGuardProxy: what goes through the clone guard is checked on the
// address dialled: plain http, https tunnels (CONNECT) and a redirect from
// an allowed server to a refused one; allowed addresses pass both ways.
func TestGuardProxy(t *testing.T) {
	page := func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.URL.Path) }
	private := httptest.NewServer(http.HandlerFunc(page))
	defer private.Close()
	privateTLS := httptest.NewTLSServer(http.HandlerFunc(page))
	defer privateTLS.Close()
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, private.URL+"/inside", http.StatusFound)
			return
		}
		page(w, r)
	}))
	defer public.Close()

	for _, tc := range []struct {
		name    string
		refuse  string // port the guard refuses
		target  string
		tlsSrv  *httptest.Server
		refused bool
		body    string
	}{
		{"http, allowed", portOf(t, private.URL), public.URL + "/a", nil, false, "hello /a"},
		{"http, refused", portOf(t, private.URL), private.URL + "/a", nil, true, ""},
		{"https tunnel, allowed", portOf(t, private.URL), privateTLS.URL + "/b", privateTLS, false, "hello /b"},
		{"https tunnel, refused", portOf(t, privateTLS.URL), privateTLS.URL + "/b", privateTLS, true, ""},
		{"redirect to a refused address", portOf(t, private.URL), public.URL + "/moved", nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := startGuardProxy(refusePort(tc.refuse))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			resp, err := proxiedClient(t, g, tc.tlsSrv).Get(tc.target)
			if tc.refused {
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "private") {
						t.Fatalf("not refused: %d %s", resp.StatusCode, b)
					}
					return
				}
				if !strings.Contains(err.Error(), "private") {
					t.Fatalf("refused without saying why: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != tc.body {
				t.Fatalf("through the guard: %d %q, want %q", resp.StatusCode, b, tc.body)
			}
		})
	}
}

// TestGuardProxyClone: go-git clones through the guard (git's smart HTTP
// protocol, the real git http-backend), and a clone whose server the guard
// refuses fails saying why.
func TestGuardProxyClone(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: no http-backend to clone from")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "demo")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("# Demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if _, err := wt.Add("README.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("init", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com"}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"}})
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		control func(string, string, syscall.RawConn) error
		refused bool
	}{
		{"allowed", nil, false},
		{"refused", refusePort(portOf(t, srv.URL)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := startGuardProxy(tc.control)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			_, err = git.CloneContext(context.Background(), memory.NewStorage(), nil, &git.CloneOptions{
				URL: srv.URL + "/demo/.git", Depth: 1, ProxyOptions: transport.ProxyOptions{URL: g.URL()}})
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "private")):
				t.Fatalf("clone through a refusing guard: %v", err)
			case !tc.refused && err != nil:
				t.Fatalf("clone through the guard: %v", err)
			}
		})
	}
}
