package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/h4r/h4r"
)

// file is one file of a source, listed but not yet read.
type file struct {
	path  string // slash-separated, relative to the source's root; a URL for url sources
	size  int64
	mtime int64  // unix ns; 0 when unknown (git objects)
	sha   string // known without reading (git objects); else computed from the content
	// target is the path a symlink inside the root points at (slash-
	// separated, relative to the root), "" for a plain file: a file's
	// credentials are judged by both names, so that a link named
	// notes.md does not carry a key file past the name check.
	target string
	read   func() ([]byte, error)
}

// listing is what a source holds.
type listing struct {
	files  []file
	issues []issue  // files refused while listing (symlinks leaving the root)
	repo   string   // repository name, for metadata and the contextual prefix
	commit string   // git commit read, or HEAD of a worktree
	root   string   // the resolved root, for the source key
	single bool     // one document (doc, url): no deletions of other files
	dir    *os.Root // a local source's folder, which its files are read through; closed after the run
}

// close releases the listing's folder.
func (l listing) close() {
	if l.dir != nil {
		_ = l.dir.Close()
	}
}

type issue struct {
	path, msg string
	skip      bool // a skip (reported, not an error)
}

// resolveRoot returns the real path of p, which must lie in one of roots,
// and the real path of that root.
func resolveRoot(p string, roots []string, field string) (real, allowed string, err error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", h4r.Errorf(h4r.EINVALID, field, "resolving %q: %v", p, err)
	}
	real, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", h4r.Errorf(h4r.EINVALID, field, "%q does not exist or cannot be read", p)
	}
	if len(roots) == 0 {
		return "", "", h4r.Errorf(h4r.EFORBIDDEN, field, "no ingest roots are configured: list the folders the server may read in H4R_INGEST_ROOTS")
	}
	for _, r := range roots {
		ra, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		rr, err := filepath.EvalSymlinks(ra)
		if err != nil {
			continue
		}
		if within(rr, real) {
			return real, rr, nil
		}
	}
	return "", "", h4r.Errorf(h4r.EFORBIDDEN, field, "%q is outside the allowed ingest roots (H4R_INGEST_ROOTS)", p)
}

// openBeneath opens the folder dir, which lies in the allowed root,
// through that root: a folder on the way swapped for a symlink since dir
// was resolved cannot lead out of it. Every file of a local source is then
// read through the returned Root, which follows no symlink out of it
// either, so what was checked when listing is what is read.
func openBeneath(allowed, dir string) (*os.Root, error) {
	rel, err := filepath.Rel(allowed, dir)
	if err != nil || !within(allowed, dir) {
		// A document that is itself the allowed root: its folder is opened
		// as it is, and the file is still opened beneath it.
		return os.OpenRoot(dir)
	}
	ar, err := os.OpenRoot(allowed)
	if err != nil {
		return nil, err
	}
	defer ar.Close()
	return ar.OpenRoot(rel)
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(root, p string) bool {
	if root == p {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// listDir lists the files under root, skipping .git and what .gitignore
// files (and .git/info/exclude) ignore. A symlink to a file inside root is
// followed; one leaving root is refused; a symlinked directory is skipped.
// Every file is read later through root (readInRoot), never by its path:
// a file swapped for a symlink leaving root between listing and reading
// is refused then too.
//
// The ignore files are read during the walk itself, as each folder is
// entered, rather than by a first walk of their own
// (gitignore.ReadPatterns): a pattern can only match below the folder of
// its file, and a pre-order walk has read every ancestor's file before it
// reaches a path, so the answer is the same (TestListDirMatchesReadPatterns)
// and a re-ingest walks the tree once.
func listDir(ctx context.Context, root *os.Root) ([]file, []issue, error) {
	var patterns []gitignore.Pattern
	ignore := gitignore.NewMatcher(nil)
	var files []file
	var issues []issue
	// Symlinks are resolved by path to learn where they lead (os.Root
	// refuses absolute links, even to a file inside it); the file is still
	// opened through root.
	rootPath, err := filepath.EvalSymlinks(root.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("resolving %s: %w", root.Name(), err)
	}
	err = fs.WalkDir(root.FS(), ".", func(slash string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			issues = append(issues, issue{path: slash, msg: fmt.Sprintf("cannot be read: %v", errors.Unwrap(err))})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		var parts []string
		if slash != "." {
			parts = strings.Split(slash, "/")
		}
		if d.IsDir() {
			if slash != "." && (d.Name() == ".git" || ignore.Match(parts, true)) {
				return fs.SkipDir
			}
			// As gitignore.ReadPatterns: the folder's .git/info/exclude, then its .gitignore.
			added := false
			for _, name := range [...]string{".git/info/exclude", ".gitignore"} {
				ps, err := readIgnoreFile(root, path.Join(slash, name), parts)
				if err != nil {
					issues = append(issues, issue{path: path.Join(slash, name), msg: fmt.Sprintf("cannot be read: %v", err)})
				}
				if len(ps) > 0 {
					patterns, added = append(patterns, ps...), true
				}
			}
			if added {
				ignore = gitignore.NewMatcher(patterns)
			}
			return nil
		}
		if ignore.Match(parts, false) {
			return nil
		}
		target := slash
		var info fs.FileInfo
		if d.Type()&fs.ModeSymlink != 0 {
			t, err := filepath.EvalSymlinks(filepath.Join(rootPath, filepath.FromSlash(slash)))
			if err != nil {
				issues = append(issues, issue{path: slash, msg: "a broken symlink", skip: true})
				return nil
			}
			if !within(rootPath, t) {
				issues = append(issues, issue{path: slash, msg: "a symlink that leaves the source's root: refused"})
				return nil
			}
			rel, _ := filepath.Rel(rootPath, t)
			target = filepath.ToSlash(rel)
			info, err = root.Stat(target)
			if err != nil {
				issues = append(issues, issue{path: slash, msg: fmt.Sprintf("cannot be read: %v", err)})
				return nil
			}
			if info.IsDir() {
				issues = append(issues, issue{path: slash, msg: "a symlinked directory: not followed", skip: true})
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil // sockets, devices
		} else if info, err = d.Info(); err != nil {
			issues = append(issues, issue{path: slash, msg: fmt.Sprintf("cannot be read: %v", err)})
			return nil
		}
		linked := ""
		if target != slash {
			linked = target
		}
		files = append(files, file{path: slash, target: linked, size: info.Size(), mtime: info.ModTime().UnixNano(),
			read: func() ([]byte, error) { return readInRoot(root, target, info.Size()) }})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", root.Name(), err)
	}
	return files, issues, nil
}

// readIgnoreFile reads the patterns of one ignore file whose folder is
// domain (nil for the root), as go-git's reader does: one pattern a line,
// blank lines and # comments left out. A file that does not exist has none.
func readIgnoreFile(root *os.Root, name string, domain []string) ([]gitignore.Pattern, error) {
	b, err := root.ReadFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil
		}
		return nil, err
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if s := sc.Text(); !strings.HasPrefix(s, "#") && strings.TrimSpace(s) != "" {
			ps = append(ps, gitignore.ParsePattern(s, domain))
		}
	}
	return ps, nil
}

// readInRoot reads the regular file name beneath root, expected to be
// size bytes, never more (a file that grew since it was listed is cut, and
// its sha says what was read). root follows no symlink out of itself, so a
// file swapped for one since it was listed is refused, not read; it is
// opened without blocking and checked to be a regular file, so a FIFO
// swapped in cannot hang the run.
func readInRoot(root *os.Root, name string, size int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is no longer a regular file (%s)", name, info.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, size))
}

// openRepo opens the git repository at root (a worktree's .git file
// included).
func openRepo(root string) (*git.Repository, error) {
	return git.PlainOpenWithOptions(root, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
}

// listGit lists a git source: with a ref, the files of that commit (blob
// shas from the tree, so nothing is read to learn what changed); without
// one, the working tree as listDir reads it, with HEAD as the commit.
func listGit(ctx context.Context, root string, dir *os.Root, ref string) (listing, error) {
	repo, err := openRepo(root)
	if err != nil {
		return listing{}, h4r.Errorf(h4r.EINVALID, "path", "%s is not a git repository: %v", root, err)
	}
	l := listing{repo: repoName(repo, root), root: root}
	if ref == "" {
		if head, err := repo.Head(); err == nil {
			l.commit = head.Hash().String()
		}
		l.files, l.issues, err = listDir(ctx, dir)
		return l, err
	}
	return listCommit(ctx, repo, ref, l)
}

// cloneGit clones a repository URL into memory (one commit deep) and lists
// the commit of ref (HEAD when empty). Only http and https URLs are cloned
// (file:// would read past the ingest roots; ssh and git:// are not
// offered), and unless allowPrivate, a URL whose host is or resolves to a
// private, loopback or link-local address is refused (checkCloneURL).
func cloneGit(ctx context.Context, uri, ref string, allowPrivate bool) (listing, error) {
	if err := checkCloneURL(ctx, uri, allowPrivate, net.DefaultResolver); err != nil {
		return listing{}, err
	}
	opts := &git.CloneOptions{URL: uri, Depth: 1, Tags: git.NoTags}
	if ref != "" && ref != "HEAD" {
		opts.ReferenceName = plumbing.NewBranchReferenceName(ref)
		opts.SingleBranch = true
	}
	if !allowPrivate {
		// Every connection of the clone goes through the guard, which
		// checks the address dialled: a DNS answer that changed since
		// checkCloneURL, or a redirect to a private host, is refused too.
		g, err := startGuardProxy(refusePrivate)
		if err != nil {
			return listing{}, err
		}
		defer g.Close()
		opts.ProxyOptions = transport.ProxyOptions{URL: g.URL()}
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	if err != nil {
		return listing{}, h4r.Errorf(h4r.EINVALID, "uri", "cloning %s: %v", uri, err)
	}
	name := strings.TrimSuffix(path.Base(strings.TrimRight(uri, "/")), ".git")
	return listCommit(ctx, repo, "HEAD", listing{repo: name, root: uri})
}

func listCommit(ctx context.Context, repo *git.Repository, ref string, l listing) (listing, error) {
	hash, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return listing{}, h4r.Errorf(h4r.EINVALID, "ref", "no commit %q in the repository: %v", ref, err)
	}
	commit, err := repo.CommitObject(*hash)
	if err != nil {
		return listing{}, fmt.Errorf("reading commit %s: %w", hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return listing{}, fmt.Errorf("reading the tree of %s: %w", hash, err)
	}
	l.commit = hash.String()
	err = tree.Files().ForEach(func(f *object.File) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch f.Mode {
		case filemode.Symlink:
			l.issues = append(l.issues, issue{path: f.Name, msg: "a symlink in the commit: not followed", skip: true})
			return nil
		case filemode.Submodule:
			return nil
		}

		l.files = append(l.files, file{path: f.Name, size: f.Size, sha: f.Hash.String(), read: func() ([]byte, error) {
			r, err := f.Reader()
			if err != nil {
				return nil, err
			}
			defer r.Close()
			return io.ReadAll(io.LimitReader(r, f.Size))
		}})
		return nil
	})
	if err != nil {
		return listing{}, fmt.Errorf("listing the files of %s: %w", hash, err)
	}
	return l, nil
}

// checkCloneURL refuses a clone URL that is not http or https, or, unless
// allowPrivate, whose host is or resolves to an address refusePrivate
// refuses: a clear error before any connection. The guard proxy then
// checks every address actually dialled.
func checkCloneURL(ctx context.Context, uri string, allowPrivate bool, r *net.Resolver) error {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return h4r.Errorf(h4r.EINVALID, "uri", "%q is not an http or https clone URL (file, ssh and git URLs are not cloned; give a local repository as path)", uri)
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil {
		return h4r.Errorf(h4r.EINVALID, "uri", "resolving the host of %s: %v", uri, err)
	}
	for _, a := range addrs {
		if err := refusePrivate("tcp", net.JoinHostPort(a.Unmap().String(), "0"), nil); err != nil {
			return h4r.Errorf(h4r.EFORBIDDEN, "uri", "cloning %s: %v", uri, err)
		}
	}
	return nil
}

// repoName is the origin remote's last path element, else the folder's name.
func repoName(repo *git.Repository, root string) string {
	if r, err := repo.Remote("origin"); err == nil && len(r.Config().URLs) > 0 {
		u := strings.TrimRight(r.Config().URLs[0], "/")
		u = u[strings.LastIndexAny(u, "/:")+1:]
		if n := strings.TrimSuffix(u, ".git"); n != "" {
			return n
		}
	}
	return filepath.Base(root)
}
