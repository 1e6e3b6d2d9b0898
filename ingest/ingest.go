package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/chunk"
	"github.com/h4r/h4r/jobs"
)

// Item kinds and link types written.
const (
	KindDocument = "document"
	KindChunk    = "chunk"

	LinkContains   = "contains"
	LinkFollows    = "follows"
	LinkReferences = "references"
)

// DefaultMaxFileBytes is the size limit of one file.
const DefaultMaxFileBytes = 1 << 20

// DefaultCredentialPatterns are the file names (path.Match patterns, on
// the base name or the path, matched case-insensitively) that hold
// credentials, besides the names and content rules every Ingester applies
// (credentialNames, gitleaks' rules: secretScanner).
var DefaultCredentialPatterns = []string{".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".npmrc", ".pgpass", "credentials.json", "*.keystore"}

// Credential handling modes.
const (
	CredentialsFlag = "flag" // ingest, with metadata.hasCredentials (policy withholds them)
	CredentialsSkip = "skip" // do not ingest; reported as skipped
)

// Store is what ingestion writes to (the item store).
type Store interface {
	// Replace upserts items and deletes the ids in deletes in one
	// transaction, so a changed file's chunks are replaced atomically.
	Replace(ctx context.Context, items []h4r.Item, deletes []string) ([]string, error)
	Delete(ctx context.Context, id string) error
}

// Index keeps each source's file index (jobs.SQLStore).
type Index interface {
	Files(ctx context.Context, source string) (map[string]jobs.FileState, error)
	PutFile(ctx context.Context, source string, f jobs.FileState) error
	DeleteFile(ctx context.Context, source, path string) error
}

// Ingester ingests sources into a store.
type Ingester struct {
	store        Store
	index        Index
	splitter     *chunk.Splitter
	roots        []string
	maxFileBytes int64
	credPatterns []string
	creds        credMatcher // the configured patterns, lower-cased
	// secrets builds the content rules at the first run, once, so that a
	// server that never ingests does not hold them
	// (bench/results/2026-12-01/memory-fixed-costs.md). An error (the rule
	// set could not be compiled) fails every run rather than let secrets
	// through.
	secrets      func() (*secretScanner, error)
	buildSecrets func() (*secretScanner, error) // what secrets calls once (default newSecretScanner)
	credVersion  string                         // names the credential rules and settings, kept in each source's file index (credRulesPath)
	credMode     string
	allowPrivate bool
	contextual   bool
	log          *slog.Logger
	client       *http.Client

	mu      sync.Mutex
	running map[string]*sync.Mutex // per source key
}

// lockSource serialises runs of one source.
func (in *Ingester) lockSource(key string) func() {
	in.mu.Lock()
	if in.running == nil {
		in.running = map[string]*sync.Mutex{}
	}
	m, ok := in.running[key]
	if !ok {
		m = &sync.Mutex{}
		in.running[key] = m
	}
	in.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Option configures an Ingester.
type Option func(*Ingester)

// WithAllowedRoots sets the folders local sources may lie in.
func WithAllowedRoots(roots ...string) Option {
	return func(in *Ingester) { in.roots = append([]string(nil), roots...) }
}

// WithMaxFileBytes sets the size limit of one file.
func WithMaxFileBytes(n int64) Option { return func(in *Ingester) { in.maxFileBytes = n } }

// WithCredentialPatterns sets the credential file name patterns, matched
// case-insensitively. The built-in names and the content rules apply
// whatever they are.
func WithCredentialPatterns(p ...string) Option {
	return func(in *Ingester) { in.credPatterns = append([]string(nil), p...) }
}

// WithCredentialMode sets what happens to credential files: CredentialsFlag or CredentialsSkip.
func WithCredentialMode(m string) Option { return func(in *Ingester) { in.credMode = m } }

// WithPrivateURLs allows url sources and git clone URLs on private and
// loopback addresses.
func WithPrivateURLs(allow bool) Option { return func(in *Ingester) { in.allowPrivate = allow } }

// WithContextualPrefix sets whether a chunk's text carries the contextual
// prefix (default true; off only to measure what it is worth).
func WithContextualPrefix(on bool) Option { return func(in *Ingester) { in.contextual = on } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(in *Ingester) { in.log = l } }

// New returns an Ingester writing to store, keeping file indexes in index
// and cutting files with splitter.
func New(store Store, index Index, splitter *chunk.Splitter, opts ...Option) *Ingester {
	in := &Ingester{store: store, index: index, splitter: splitter, maxFileBytes: DefaultMaxFileBytes,
		credPatterns: DefaultCredentialPatterns, credMode: CredentialsFlag, contextual: true, log: slog.Default(),
		buildSecrets: newSecretScanner}
	for _, o := range opts {
		o(in)
	}
	in.client = httpClient(in.allowPrivate)
	lower := make([]string, len(in.credPatterns))
	for i, p := range in.credPatterns {
		lower[i] = strings.ToLower(p)
	}
	in.creds = newCredMatcher(lower)
	in.secrets = sync.OnceValues(in.buildSecrets)
	in.credVersion = credentialRulesVersion(lower, in.credMode)
	return in
}

// Run ingests one source, reporting progress after each file; p carries
// on from what earlier sources of the same job did. It returns an error
// only when the source as a whole cannot be read (refused, not a
// repository, unreachable); a file that cannot be ingested is an entry in
// the progress's errors or skips, and the run goes on.
func (in *Ingester) Run(ctx context.Context, src Source, opts Options, p *jobs.Progress, report func(jobs.Progress)) error {
	if err := src.Validate("source"); err != nil {
		return err
	}
	secrets, err := in.secrets()
	if err != nil {
		return fmt.Errorf("ingesting: the credential rules cannot be used: %w", err)
	}
	l, typ, err := in.list(ctx, src)
	if err != nil {
		return err
	}
	defer l.close()
	key := sourceKey(typ, l)
	p.FilesTotal += len(l.files)
	// One run per source at a time: two would race on its file index.
	unlock := in.lockSource(key)
	defer unlock()
	for _, is := range l.issues {
		if is.skip {
			p.AddSkip(is.path, is.msg)
		} else {
			p.AddError(is.path, is.msg)
		}
	}
	index, err := in.index.Files(ctx, key)
	if err != nil {
		return err
	}
	// Files ingested unchanged are not read again; when the credential
	// rules changed since the source's files were last checked (or they
	// were checked by a version without content rules), they are read and
	// checked once more, and those found are written again, flagged.
	rules, checked := index[credRulesPath]
	delete(index, credRulesPath)
	rescan := !checked || rules.SHA != in.credVersion
	w := writer{in: in, secrets: secrets, src: src, typ: typ, key: key, l: l, opts: opts, p: p, index: index, rescan: rescan}
	seen := make(map[string]bool, len(l.files))
	for _, f := range l.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.FilesSeen++
		if err := w.file(ctx, f); err != nil {
			return err
		}
		seen[f.path] = true
		report(*p)
	}
	if !l.single {
		for _, pth := range slices.Sorted(mapsKeys(index)) {
			if seen[pth] && !w.dropped[pth] {
				continue
			}
			if err := w.remove(ctx, index[pth]); err != nil {
				return err
			}
			if !seen[pth] {
				p.FilesDeleted++
			}
			report(*p)
		}
	}
	if rescan {
		if err := in.index.PutFile(ctx, key, jobs.FileState{Path: credRulesPath, SHA: in.credVersion}); err != nil {
			return err
		}
	}
	return nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// list resolves and lists a source.
func (in *Ingester) list(ctx context.Context, src Source) (listing, string, error) {
	switch src.Type {
	case TypeURL:
		l, err := fetchPage(ctx, in.client, src.URI, src.Auth, in.maxFileBytes)
		return l, TypeURL, err
	case TypeGit:
		if src.Path == "" && strings.Contains(src.URI, "://") {
			l, err := cloneGit(ctx, src.URI, src.Ref, in.allowPrivate)
			return l, TypeGit, err
		}
	}
	root, allowed, err := resolveRoot(src.location(), in.roots, "path")
	if err != nil {
		return listing{}, "", err
	}
	if src.Type == TypeDoc {
		// root is the document itself, its symlinks resolved inside the
		// roots; it is read through its folder, opened beneath the root.
		dir, err := openBeneath(allowed, filepath.Dir(root))
		if err != nil {
			return listing{}, "", h4r.Errorf(h4r.EINVALID, "path", "opening the folder of %s: %v", src.location(), err)
		}
		name := filepath.Base(root)
		info, err := dir.Stat(name)
		if err != nil || !info.Mode().IsRegular() {
			dir.Close()
			return listing{}, "", h4r.Errorf(h4r.EINVALID, "path", "%s is not a regular file", src.location())
		}
		f := file{path: name, size: info.Size(), mtime: info.ModTime().UnixNano(),
			read: func() ([]byte, error) { return readInRoot(dir, name, info.Size()) }}
		return listing{files: []file{f}, root: root, single: true, dir: dir}, TypeDoc, nil
	}
	dir, err := openBeneath(allowed, root)
	if err != nil {
		return listing{}, "", h4r.Errorf(h4r.EINVALID, "path", "opening %s: %v", src.location(), err)
	}
	if src.Type == TypeGit {
		l, err := listGit(ctx, root, dir, src.Ref)
		if err != nil {
			dir.Close()
			return listing{}, "", err
		}
		l.dir = dir
		return l, TypeGit, nil
	}
	files, issues, err := listDir(ctx, dir)
	if err != nil {
		dir.Close()
		return listing{}, "", err
	}
	l := listing{files: files, issues: issues, root: root, repo: filepath.Base(root), dir: dir}
	if repo, err := openRepo(root); err == nil {
		l.repo = repoName(repo, root)
		if head, err := repo.Head(); err == nil {
			l.commit = head.Hash().String()
		}
	}
	return l, TypeFS, nil
}

// SourceKey names a source in item ids and the file index: its type, a
// readable name and a hash of where it is.
func sourceKey(typ string, l listing) string {
	h := sha256.Sum256([]byte(typ + "\x00" + l.root))
	name := l.repo
	if name == "" {
		name = typ
	}
	return name + "@" + hex.EncodeToString(h[:4])
}

// writer ingests the files of one source.
type writer struct {
	in      *Ingester
	secrets *secretScanner
	src     Source
	typ     string
	key     string
	l       listing
	opts    Options
	p       *jobs.Progress
	index   map[string]jobs.FileState
	dropped map[string]bool // listed but no longer ingested (skipped now): their old items go
	rescan  bool            // read unchanged files too, to check them against changed credential rules
	// Built by layoutOnce when a file is first chunked.
	paths  map[string]bool
	module string              // go.mod's module path, to resolve imports
	goDirs map[string][]string // folder → its non-test Go files
}

func (w *writer) drop(path, msg string, skip bool) {
	if skip {
		w.p.AddSkip(path, msg)
	} else {
		w.p.AddError(path, msg)
	}
	if _, ok := w.index[path]; ok {
		if w.dropped == nil {
			w.dropped = map[string]bool{}
		}
		w.dropped[path] = true
	}
}

// file ingests one file when it changed. The returned error stops the
// run (the store or the index failed); a problem with the file itself is
// recorded and nil returned.
func (w *writer) file(ctx context.Context, f file) error {
	cred := w.isCredential(f.path) || (f.target != "" && w.isCredential(f.target))
	if cred && w.in.credMode == CredentialsSkip {
		w.drop(f.path, "its name says it holds credentials: not ingested", true)
		return nil
	}
	if f.size > w.in.maxFileBytes {
		w.drop(f.path, fmt.Sprintf("%d bytes, over the %d-byte limit", f.size, w.in.maxFileBytes), true)
		return nil
	}
	old, had := w.index[f.path]
	force := w.opts.Rechunk || w.opts.Reembed
	// Unchanged without reading: a git object's sha, or a local file's
	// size and mtime as recorded with its sha.
	if had && old.SHA != "" && !force && !w.l.single && !w.rescan {
		if (f.sha != "" && f.sha == old.SHA) || (f.sha == "" && f.mtime != 0 && f.mtime == old.MTime && f.size == old.Size) {
			w.p.FilesUnchanged++
			return nil
		}
	}
	raw, err := f.read()
	if err != nil {
		var tl errTooLarge
		var sk errSkip
		switch {
		case errors.As(err, &tl), errors.As(err, &sk):
			w.drop(f.path, err.Error(), true)
		default:
			w.drop(f.path, fmt.Sprintf("cannot be read: %v", err), false)
		}
		return nil
	}
	sha := f.sha
	if sha == "" {
		sha = plumbing.ComputeHash(plumbing.BlobObject, raw).String()
	}
	unchanged := func() error {
		w.p.FilesUnchanged++
		if old.MTime != f.mtime || old.Size != f.size { // touched, not changed: remember the new stat
			old.MTime, old.Size = f.mtime, f.size
			return w.in.index.PutFile(ctx, w.key, old)
		}
		return nil
	}
	same := had && old.SHA == sha && !force
	if same && !w.rescan {
		return unchanged()
	}
	text, err := w.text(f.path, raw)
	if err != nil {
		var sk errSkip
		w.drop(f.path, err.Error(), errors.As(err, &sk))
		return nil
	}
	if same && !cred && w.secrets.scan(f.path, text) == "" && !privateKeyHeader.MatchString(text) {
		return unchanged()
	}
	if !cred {
		// The whole file is flagged, not only the chunks holding the
		// secret: a key cut across two chunks would leave one half unseen.
		if rule := w.secrets.scan(f.path, text); rule != "" || privateKeyHeader.MatchString(text) {
			if rule == "" {
				rule = "private-key-header"
			}
			cred = true
			w.in.log.InfoContext(ctx, "ingest: a file holds credentials", "source", w.key, "path", f.path, "rule", rule)
			if w.in.credMode == CredentialsSkip {
				w.drop(f.path, fmt.Sprintf("holds credentials (rule %s): not ingested", rule), true)
				return nil
			}
		}
	}
	chunks := w.in.splitter.Split(w.chunkName(f.path), text)
	if len(chunks) == 0 {
		w.drop(f.path, "holds no text", true)
		return nil
	}
	items := w.items(f.path, sha, text, chunks, cred)
	for i := range items {
		if err := items[i].Validate(""); err != nil {
			w.drop(f.path, fmt.Sprintf("its item %s is invalid: %v", items[i].ID, err), false)
			return nil
		}
	}
	// Mark the file pending with the larger chunk count first: a run
	// interrupted from here on redoes the file and deletes every chunk
	// either version wrote.
	state := jobs.FileState{Path: f.path, SHA: sha, Size: f.size, MTime: f.mtime, Chunks: len(chunks)}
	if err := w.in.index.PutFile(ctx, w.key, jobs.FileState{Path: f.path, Chunks: max(old.Chunks, len(chunks))}); err != nil {
		return err
	}
	// The new items and the deletion of the chunks past the new count go
	// in one transaction: no reader sees old surplus chunks beside new
	// ones, and no crash leaves them.
	var surplus []string
	for i := len(chunks); i < old.Chunks; i++ {
		surplus = append(surplus, w.chunkID(f.path, i))
	}
	if _, err := w.in.store.Replace(ctx, items, surplus); err != nil {
		var herr *h4r.Error
		if errors.As(err, &herr) && herr.Code == h4r.EINVALID {
			w.drop(f.path, fmt.Sprintf("the store refused its items: %v", err), false)
			return nil
		}
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	w.p.ChunksDeleted += len(surplus)
	if err := w.in.index.PutFile(ctx, w.key, state); err != nil {
		return err
	}
	w.p.FilesChanged++
	w.p.ChunksWritten += len(chunks)
	return nil
}

// remove deletes a file's document and chunks, then its index entry.
func (w *writer) remove(ctx context.Context, old jobs.FileState) error {
	for i := range old.Chunks {
		if err := w.deleteItem(ctx, w.chunkID(old.Path, i)); err != nil {
			return err
		}
		w.p.ChunksDeleted++
	}
	if err := w.deleteItem(ctx, w.docID(old.Path)); err != nil {
		return err
	}
	return w.in.index.DeleteFile(ctx, w.key, old.Path)
}

func (w *writer) deleteItem(ctx context.Context, id string) error {
	err := w.in.store.Delete(ctx, id)
	var herr *h4r.Error
	if err != nil && !(errors.As(err, &herr) && herr.Code == h4r.ENOTFOUND) {
		return fmt.Errorf("deleting %s: %w", id, err)
	}
	return nil
}

// text turns a file's bytes into the text to chunk.
func (w *writer) text(name string, raw []byte) (string, error) {
	if strings.EqualFold(path.Ext(name), ".pdf") || bytes.HasPrefix(raw, []byte("%PDF-")) {
		t, err := pdfText(raw)
		if err != nil {
			return "", err
		}
		raw = t
	} else if bytes.IndexByte(raw[:min(len(raw), 8000)], 0) >= 0 {
		return "", errSkip{"a binary file"}
	}
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	return string(raw), nil
}

// chunkName is the name the splitter chooses a chunker by: a page is
// Markdown (HTML is converted to it), a PDF is text.
func (w *writer) chunkName(p string) string {
	switch {
	case w.typ == TypeURL:
		return "page.md"
	case strings.EqualFold(path.Ext(p), ".pdf"):
		return "document.txt"
	}
	return p
}

// privateKeyHeader is the armour line of a private key. A file that holds
// one is a credential whatever follows it: gitleaks' rule wants a key's
// body too, and a truncated or redacted key still names what it was.
var privateKeyHeader = regexp.MustCompile(`-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----`)

// isCredential reports whether p's name says it holds credentials: a
// built-in name or a configured pattern, in any case.
func (w *writer) isCredential(p string) bool {
	return matchTails(w.in.creds, strings.ToLower(p)) || w.secrets.nameMatch(p)
}

// credMatcher answers whether a path matches a credential pattern, on its
// base name or whole, as path.Match does (matchCredentialSlow). It runs
// for every file of every re-ingest, so the usual patterns skip
// path.Match: a literal name is a map lookup, "*" followed by a literal a
// suffix test on the base name (a "*" never matches a "/", so it cannot
// match a path with folders in it).
type credMatcher struct {
	literal  map[string]bool
	suffixes []string
	globs    []string
}

func newCredMatcher(patterns []string) credMatcher {
	m := credMatcher{literal: map[string]bool{}}
	const meta = `*?[\`
	for _, pat := range patterns {
		switch {
		case !strings.ContainsAny(pat, meta):
			m.literal[pat] = true
		case strings.HasPrefix(pat, "*") && !strings.ContainsAny(pat[1:], meta+"/"):
			m.suffixes = append(m.suffixes, pat[1:])
		default:
			m.globs = append(m.globs, pat)
		}
	}
	return m
}

func (m credMatcher) match(p string) bool {
	base := path.Base(p)
	if m.literal[base] || m.literal[p] {
		return true
	}
	for _, s := range m.suffixes {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	for _, pat := range m.globs {
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// docID and chunkID are the items' ids; a path too long for an id is
// replaced by its hash.
func (w *writer) docID(p string) string { return "doc:" + w.key + ":" + w.idPath(p) }

func (w *writer) chunkID(p string, i int) string {
	return fmt.Sprintf("chunk:%s:%s#%d", w.key, w.idPath(p), i)
}

func (w *writer) idPath(p string) string {
	if len(p)+len(w.key)+16 <= h4r.MaxIDBytes {
		return p
	}
	h := sha256.Sum256([]byte(p))
	return hex.EncodeToString(h[:16])
}
