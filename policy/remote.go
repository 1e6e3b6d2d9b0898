package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
)

// Defaults of Remote.
const (
	DefaultRemoteTimeout     = 100 * time.Millisecond
	DefaultRemoteConcurrency = 8
	// RemoteRevision is Remote.Revision when the OPA server reports no
	// bundle revision (policies loaded from files).
	RemoteRevision = "remote"
)

// Remote asks a remote OPA server for decisions: POST
// {url}/v1/data/cmo/context with {"input": ...}, the input of
// docs/concepts.md, one call per item (OPA's open-source API has no batch
// endpoint), several at once over reused connections, each under its own
// deadline. An unreachable server, a late answer, an error status or an
// undefined decision is an error for that item: the caller fails closed (or
// uses the fallback rules). Once one call of a batch cannot reach the
// server, the rest of that batch fail at once instead of each waiting for
// its own deadline.
//
// Put a Cache in front of it (Cache.Wrap) to keep decisions for
// SCS_OPA_CACHE_TTL.
type Remote struct {
	base        string
	client      *http.Client
	timeout     time.Duration
	concurrency int
	cache       *Cache
	created     time.Time
	revision    atomic.Pointer[string]

	log *slog.Logger
	// ignoredKeys are the pack keys already logged as ignored: said once
	// per key, not on every pack.
	ignoredKeys sync.Map

	mu          sync.Mutex
	lastError   string
	lastErrorAt time.Time
}

// RemoteOption configures NewRemote.
type RemoteOption func(*Remote)

// WithTimeout sets the deadline of one call (default 100 ms,
// SCS_OPA_TIMEOUT).
func WithTimeout(d time.Duration) RemoteOption { return func(r *Remote) { r.timeout = d } }

// WithHTTPClient sets the HTTP client (default: one with its own pooled
// transport).
func WithHTTPClient(c *http.Client) RemoteOption { return func(r *Remote) { r.client = c } }

// WithConcurrency sets how many calls one batch makes at once (default 8).
func WithConcurrency(n int) RemoteOption { return func(r *Remote) { r.concurrency = max(n, 1) } }

// WithRemoteLogger sets the logger (default slog.Default()).
func WithRemoteLogger(l *slog.Logger) RemoteOption { return func(r *Remote) { r.log = l } }

// WithRemoteCache caches decisions in c (Snapshot puts it in front).
func WithRemoteCache(c *Cache) RemoteOption { return func(r *Remote) { r.cache = c } }

// NewRemote returns a client of the OPA server at baseURL
// (http://host:8181). An invalid URL is an invalid_argument error naming
// SCS_OPA_URL.
func NewRemote(baseURL string, opts ...RemoteOption) (*Remote, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "SCS_OPA_URL", "want an http(s) URL of an OPA server, got %q", baseURL)
	}
	r := &Remote{base: strings.TrimSuffix(baseURL, "/"), timeout: DefaultRemoteTimeout, concurrency: DefaultRemoteConcurrency, created: time.Now().UTC(), log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	if r.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = r.concurrency
		r.client = &http.Client{Transport: tr}
	}
	rev := RemoteRevision
	r.revision.Store(&rev)
	return r, nil
}

// Snapshot returns what one request decides with: the remote, with the
// decision cache in front when there is one.
func (r *Remote) Snapshot() h4r.Decider {
	if r.cache != nil {
		return r.cache.Wrap(r)
	}
	return r
}

// Status reports the remote policy: its URL, the revision OPA last
// reported, and the last time OPA could not be reached.
func (r *Remote) Status() h4r.PolicyStatus {
	s := h4r.PolicyStatus{Mode: h4r.PolicyRemote, Source: r.base, Revision: r.Revision(), LoadedAt: r.created}
	r.mu.Lock()
	if r.lastError != "" {
		at := r.lastErrorAt
		s.LastError, s.LastErrorAt = r.lastError, &at
	}
	r.mu.Unlock()
	if r.cache != nil {
		cs := r.cache.Stats()
		s.Cache = &cs
	}
	return s
}

// Source is the server's URL.
func (r *Remote) Source() string { return r.base }

// Revision names the remote policy: "remote", or "remote:" and the
// revisions of the bundles the server last reported (provenance), so that
// a new bundle on the server changes cache keys.
func (r *Remote) Revision() string { return *r.revision.Load() }

// opaResponse is the answer of OPA's data API.
type opaResponse struct {
	Result     json.RawMessage `json:"result"`
	Provenance struct {
		Bundles map[string]struct {
			Revision string `json:"revision"`
		} `json:"bundles"`
	} `json:"provenance"`
}

// unreachableError marks a call that did not get an answer from OPA.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return "OPA unreachable: " + e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

// PolicyUnreachable lets the slicer say "OPA unreachable" in a pack without
// showing the error, which names the server.
func (unreachableError) PolicyUnreachable() bool { return true }

// query POSTs input to the document at path (cmo/context, cmo/context/pack)
// and returns its result, nil when undefined.
func (r *Remote) query(ctx context.Context, path string, input map[string]any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"input": input})
	if err != nil {
		return nil, fmt.Errorf("encoding the policy input: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/data/"+path+"?provenance=true", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("asking OPA: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		r.mu.Lock()
		r.lastError, r.lastErrorAt = err.Error(), time.Now().UTC()
		r.mu.Unlock()
		return nil, unreachableError{err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, unreachableError{fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("OPA answered %s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var out opaResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("reading OPA's answer: %w", err)
	}
	r.noteRevision(out)
	if len(out.Result) == 0 {
		return nil, nil
	}
	return out.Result, nil
}

func (r *Remote) noteRevision(out opaResponse) {
	rev := RemoteRevision
	if len(out.Provenance.Bundles) > 0 {
		var parts []string
		for name, b := range out.Provenance.Bundles {
			parts = append(parts, name+"="+b.Revision)
		}
		slices.Sort(parts)
		rev += ":" + strings.Join(parts, ",")
	}
	if *r.revision.Load() != rev {
		r.revision.Store(&rev)
	}
}

// Decide asks OPA about one item.
func (r *Remote) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	if item == nil {
		return h4r.Decision{}, h4r.Errorf(h4r.EINVALID, "item", "no item to decide on")
	}
	raw, err := r.query(ctx, "cmo/context", Input(spec, item))
	if err != nil {
		return h4r.Decision{}, fmt.Errorf("asking OPA at %s for item %q: %w", r.base, item.ID, err)
	}
	if raw == nil {
		return h4r.Decision{}, fmt.Errorf("asking OPA at %s for item %q: decision %s is undefined", r.base, item.ID, PackagePath)
	}
	d, err := decodeRemoteDecision(raw)
	if err != nil {
		return h4r.Decision{}, fmt.Errorf("reading OPA's decision for item %q: %w", item.ID, err)
	}
	return d, nil
}

// decodeRemoteDecision reads the result document of OPA's answer: the same
// contract as an embedded decision.
func decodeRemoteDecision(result []byte) (h4r.Decision, error) {
	var doc any
	if err := json.Unmarshal(result, &doc); err != nil {
		return h4r.Decision{}, err
	}
	return decodeDecision(doc)
}

// DecideBatch asks OPA about every item, r.concurrency calls at once.
func (r *Remote) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	out := make([]h4r.DecisionResult, len(items))
	var unreachable atomic.Pointer[error]
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.concurrency, len(items)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				if e := unreachable.Load(); e != nil {
					out[i].Err = fmt.Errorf("not asked: %w", *e)
					continue
				}
				out[i].Decision, out[i].Err = r.Decide(ctx, spec, items[i])
				var ue unreachableError
				if errors.As(out[i].Err, &ue) {
					err := out[i].Err
					unreachable.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// PackSettings asks OPA for data.cmo.context.pack; undefined sets nothing.
func (r *Remote) PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error) {
	raw, err := r.query(ctx, "cmo/context/pack", map[string]any{"specialist": specialistInput(spec)})
	if err != nil {
		return h4r.PackSettings{}, fmt.Errorf("asking OPA at %s for pack settings: %w", r.base, err)
	}
	if raw == nil {
		return h4r.PackSettings{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return h4r.PackSettings{}, fmt.Errorf("reading OPA's pack settings: %w", err)
	}
	ps, ignored, err := decodePackSettings(doc)
	if err != nil {
		return h4r.PackSettings{}, fmt.Errorf("reading OPA's pack settings: %w", err)
	}
	for _, k := range ignored {
		if _, seen := r.ignoredKeys.LoadOrStore(k, true); !seen {
			r.log.WarnContext(ctx, "OPA's pack settings carry a key that is not a pack setting; it is ignored",
				"key", k, "settings", strings.Join(packKeys, ", "))
		}
	}
	return ps, nil
}

// Ping asks OPA's health endpoint whether the server answers and has its
// policies loaded.
func (r *Remote) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(r.timeout, time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/health", nil)
	if err != nil {
		return fmt.Errorf("asking OPA: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return unreachableError{err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("OPA health: %s", resp.Status)
	}
	return nil
}
