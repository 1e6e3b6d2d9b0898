package bridge

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/h4r/h4r"
)

// Version is the context_bridge block's version.
const Version = "1.0"

// Defaults of Config (the bridge contract's).
const (
	DefaultMinSimilarity = 0.6
	DefaultMaxMatches    = 3
	DefaultCacheSize     = 100
	DefaultTimeout       = 2 * time.Second
	DefaultEmbedTimeout  = 500 * time.Millisecond
	// candidateLimit is how many trajectories are scored per call.
	candidateLimit = 50
)

// DefaultInFlightPerCPU enrichments run at once per CPU (WithMaxInFlight):
// one computing while another waits on a store read, as the server's packs.
const DefaultInFlightPerCPU = 2

// DefaultTools is the bridge contract's allow-list.
var DefaultTools = []string{"think", "make-decision", "decompose-problem", "analyze-perspectives", "build-causal-graph"}

// Config is the bridge's configuration; Enabled is the feature flag.
type Config struct {
	Enabled       bool
	Tools         []string // the allow-list of tool names
	MinSimilarity float64
	MaxMatches    int
	CacheSize     int
	Timeout       time.Duration // of a whole enrichment (EHR-2)
	EmbedTimeout  time.Duration // of the embedding step (EHR-3)
	// HoldBackPercent is the share of sessions (0-100) left out during a
	// gradual rollout (H4R_BRIDGE_ROLLOUT_PERCENT is 100 less it); the
	// zero value enriches every session.
	HoldBackPercent int
}

// DefaultConfig is off, with the document's allow-list and limits. The
// minimum similarity is 0.6, the lower end of the document's "same domain"
// range (scenario 2), rather than its code's 0.7.
func DefaultConfig() Config {
	return Config{Tools: slices.Clone(DefaultTools), MinSimilarity: DefaultMinSimilarity, MaxMatches: DefaultMaxMatches,
		CacheSize: DefaultCacheSize, Timeout: DefaultTimeout, EmbedTimeout: DefaultEmbedTimeout}
}

// Candidate is a past trajectory as the caller may see it.
type Candidate struct {
	TrajectoryID string
	SessionID    string
	Description  string
	Domain       string
	ToolSequence []string
	SuccessScore float64
	QualityScore float64
	// Version is the version of the item the candidate was read from (0:
	// unknown), which delivery checks is still the stored one.
	Version int
	// sig, when set, is the signature of exactly these fields made by
	// sigBy (the index's, read-only): Bridge.match uses it instead of
	// extracting concepts again when its own extractor is the same.
	sig   *Signature
	sigBy ConceptExtractor
	// score, when scored, is the concept similarity of sig to the call
	// (the index's, which is ConceptSimilarity's: TestIndexEqualsScan),
	// so that Bridge.match need not compute it again.
	score  float64
	scored bool
}

// Source reads candidate trajectories for a signature as spec may see
// them: it must pass the policy slicer.
type Source interface {
	Candidates(ctx context.Context, spec h4r.Specialist, sig *Signature, limit int) ([]Candidate, error)
}

// Changes numbers the states of the trajectories a Source reads: the
// number moves on whenever a trajectory is written, changes version or is
// deleted (Index.Generation). A cached answer is used only at the number
// it was read at.
type Changes interface {
	Generation() uint64
}

// VersionReader reads the stored version of items; an id not stored is
// absent from the map (the stores' ItemVersions).
type VersionReader interface {
	ItemVersions(ctx context.Context, ids []string) (map[string]int, error)
}

// Match is one similar past trajectory (the bridge contract's wire names).
type Match struct {
	TrajectoryID string  `json:"trajectory_id"`
	SessionID    string  `json:"session_id"`
	Similarity   float64 `json:"similarity"`
	Summary      string  `json:"summary"`
	SuccessScore float64 `json:"success_score"`
	QualityScore float64 `json:"quality_score"`
}

// Block is the bridge contract's context_bridge object.
type Block struct {
	Version         string  `json:"version"`
	Status          string  `json:"status,omitempty"` // "degraded" on timeout
	Reason          string  `json:"reason,omitempty"`
	Detail          string  `json:"detail,omitempty"`
	Matches         []Match `json:"matches"`
	Recommendation  string  `json:"recommendation,omitempty"`
	EmbeddingStatus string  `json:"embedding_status,omitempty"`
	EmbeddingError  string  `json:"embedding_error,omitempty"`
	SimilarityMode  string  `json:"similarity_mode"` // "concept_only" or "hybrid"
}

// Response is a tool result with its context_bridge, which is absent when
// the bridge is off, the tool is not allow-listed, the call has no text,
// or storage failed.
type Response struct {
	Result        any    `json:"result"`
	ContextBridge *Block `json:"context_bridge,omitempty"`
}

// Bridge finds similar past trajectories. Create it with New.
type Bridge struct {
	cfg       Config
	source    Source
	embedder  h4r.Embedder // nil: concept-only
	extractor ConceptExtractor
	cache     *lru.Cache[string, cached]
	flight    flight // one store read per key at a time
	changes   Changes
	revision  func() string // the policy's revision; nil: one policy forever
	versions  VersionReader // nil: matches are not checked at delivery
	metrics   *Metrics
	log       *slog.Logger
	// slots bounds how many enrichments run at once; a full channel's
	// waiting senders are served first come, first served.
	slots chan struct{}
}

// cached is an answer and what it was read at: the version of each match
// (beside matches) and the generation of the trajectories (Changes).
type cached struct {
	matches  []Match
	versions []int
	mode     string
	gen      uint64
}

// Option configures New.
type Option func(*Bridge)

// WithEmbedder turns on hybrid similarity.
func WithEmbedder(e h4r.Embedder) Option { return func(b *Bridge) { b.embedder = e } }

// WithExtractor replaces TechExtractor.
func WithExtractor(x ConceptExtractor) Option { return func(b *Bridge) { b.extractor = x } }

// WithMaxInFlight sets how many enrichments run at once (default
// DefaultInFlightPerCPU per CPU); the rest wait their turn in arrival
// order, and the wait counts against the timeout.
// An enrichment is a few hundred microseconds of CPU with no I/O wait on
// the embedded store, so running more at once than there are cores only
// lets the scheduler pick who finishes: with 100 callers on two cores,
// a call that lost its core waited behind the rest for 100-250 ms (p99)
// while the median was 1 ms. Served in order, every call waits about as
// long as the queue ahead of it takes.
func WithMaxInFlight(n int) Option {
	return func(b *Bridge) { b.slots = make(chan struct{}, max(n, 1)) }
}

// WithChanges sets the generation of the trajectories the source reads;
// by default it is the source's own, when it has one (IndexSource). A
// bridge without one caches nothing: it could not tell when a cached
// answer no longer holds.
func WithChanges(c Changes) Option { return func(b *Bridge) { b.changes = c } }

// WithPolicyRevision sets the revision of the policy the source's slicer
// applies (the policy's Revision): answers are cached per revision.
func WithPolicyRevision(rev func() string) Option { return func(b *Bridge) { b.revision = rev } }

// WithVersions makes every answer, cached or not, checked against the
// store at delivery: a match whose trajectory is gone or is at another
// version than the one read is left out (a copy read earlier, by this
// replica's index or cache, is never served after the store moved on).
func WithVersions(v VersionReader) Option { return func(b *Bridge) { b.versions = v } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(b *Bridge) { b.log = l } }

// New returns a bridge over source.
func New(cfg Config, source Source, opts ...Option) (*Bridge, error) {
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.MaxMatches <= 0 {
		cfg.MaxMatches = DefaultMaxMatches
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.EmbedTimeout <= 0 {
		cfg.EmbedTimeout = DefaultEmbedTimeout
	}
	c, err := lru.New[string, cached](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("bridge: the signature cache: %w", err)
	}
	b := &Bridge{cfg: cfg, source: source, extractor: TechExtractor{}, cache: c, metrics: &Metrics{}, log: slog.Default()}
	for _, o := range opts {
		o(b)
	}
	if b.slots == nil {
		b.slots = make(chan struct{}, DefaultInFlightPerCPU*runtime.GOMAXPROCS(0))
	}
	if c, ok := source.(Changes); ok && b.changes == nil {
		b.changes = c
	}
	return b, nil
}

// Metrics returns the bridge's counters.
func (b *Bridge) Metrics() *Metrics { return b.metrics }

// Enabled reports the feature flag.
func (b *Bridge) Enabled() bool { return b.cfg.Enabled }

// Enrich wraps result (the tool's own answer, returned unchanged) with the
// trajectories similar to the call, as spec may see them. It never fails:
// enrichment is not critical (the bridge contract's degradation strategy).
func (b *Bridge) Enrich(ctx context.Context, spec h4r.Specialist, tool string, params map[string]any, result any) (resp Response) {
	out := Response{Result: result}
	if !b.cfg.Enabled || !slices.Contains(b.cfg.Tools, tool) || !InRollout(b.cfg.HoldBackPercent, spec, params) {
		return out
	}
	start := time.Now()
	noText := false
	defer func() {
		if !noText {
			b.finished(ctx, tool, time.Since(start), resp)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return b.timedOut(ctx, out, tool, time.Since(start))
	}
	// The slot is freed when the work is done: here, or by the store read
	// below, which may outlive a timed-out call.
	slotHeld := true
	defer func() {
		if slotHeld {
			<-b.slots
		}
	}()
	sig := ExtractSignature(tool, params, b.extractor)
	if sig == nil {
		noText = true
		b.log.WarnContext(ctx, "context bridge: the call has no text to match on", "tool", tool) // EHR-4
		return out
	}
	b.metrics.Enrichments.Add(1)
	rev := ""
	if b.revision != nil {
		rev = b.revision()
	}
	key := cacheKey(sig.Fingerprint, spec, rev)
	var gen uint64
	if b.changes != nil {
		gen = b.changes.Generation()
		if c, ok := b.cache.Get(key); ok && c.gen == gen {
			b.metrics.CacheHits.Add(1)
			return b.deliver(ctx, out, tool, start, key, answer{blk: b.block(c.matches, c.mode), versions: c.versions})
		}
	}
	b.metrics.CacheMisses.Add(1)
	// Calls with one key at once (an agent retrying, many agents on one
	// problem) share one read, if it started at the generation they see.
	fkey := key + "\x00" + strconv.FormatUint(gen, 10)
	call, readCtx, leads := b.flight.join(ctx, fkey)
	defer b.flight.leave(fkey, call)
	slotHeld = false
	if leads {
		go func() {
			a := b.match(readCtx, spec, sig)
			// Kept only if the policy did not change during the read: an
			// answer decided by another revision must not be filed under
			// this one, which may come back.
			if a.err == nil && a.cacheable && b.changes != nil && (b.revision == nil || b.revision() == rev) {
				b.cache.Add(key, cached{matches: a.blk.Matches, versions: a.versions, mode: a.blk.SimilarityMode, gen: gen})
			}
			// The slot is freed before the callers are woken, not after:
			// the goroutine woken last runs next on this processor (the
			// scheduler's runnext), ahead of its run queue. Woken first, a
			// caller was displaced by the next in line, who made its own
			// read and woke the next, and so on: callers with their answer
			// waited for that chain to use up a time slice (10 ms), and p99
			// was 4-7 times p50 with 100 calls at once.
			<-b.slots
			b.flight.finish(fkey, call, a.answer)
		}()
	} else {
		<-b.slots // a call that joins a read does no work of its own
	}
	var a answer
	select {
	case <-call.done:
		a = call.ans
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	return b.deliver(ctx, out, tool, start, key, a)
}

// InRollout reports whether a call is enriched when holdBack percent of
// sessions are left out: a hash of params.session_id, or of the caller's
// identity when the call names no session, picks one of 100 buckets, so
// that a session is always in or always out and raising the percentage
// only adds sessions.
func InRollout(holdBack int, spec h4r.Specialist, params map[string]any) bool {
	switch {
	case holdBack <= 0:
		return true
	case holdBack >= 100:
		return false
	}
	key, _ := params["session_id"].(string)
	if key == "" {
		key = "caller\x00" + spec.Type + "\x00" + spec.ID
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32()%100) >= holdBack
}

// finished records an enrichment that took elapsed and answered resp:
// its latency, whether it failed (the bridge's health), and a warning
// when it was slow.
func (b *Bridge) finished(ctx context.Context, tool string, elapsed time.Duration, resp Response) {
	failed := ""
	switch {
	case resp.ContextBridge == nil:
		failed = "error"
	case resp.ContextBridge.Status == "degraded":
		failed = resp.ContextBridge.Reason
	}
	b.metrics.observe(elapsed, failed)
	if elapsed > SlowEnrichment {
		b.log.WarnContext(ctx, "context bridge: enrichment was slow", "tool", tool, "elapsed", elapsed, "threshold", SlowEnrichment)
	}
}

// Health is "ok", or "degraded" when the latest enrichment failed (timed
// out, or reading trajectories failed); the next one that does not clears
// it. A bridge that is off is "off".
func (b *Bridge) Health() string {
	switch {
	case !b.cfg.Enabled:
		return "off"
	case b.metrics.Degraded() != "":
		return "degraded"
	}
	return "ok"
}

// deliver answers with a, after checking its matches are current
// (WithVersions), or with the degraded block or nothing when a or the
// check failed.
func (b *Bridge) deliver(ctx context.Context, out Response, tool string, start time.Time, key string, a answer) Response {
	if a.err == nil {
		var matches []Match
		matches, a.err = b.current(ctx, a.blk.Matches, a.versions)
		if a.err == nil {
			if len(matches) < len(a.blk.Matches) {
				b.cache.Remove(key) // read from a copy the store has moved past
			}
			blk := *a.blk // each caller its own block, of its own checked matches
			blk.Matches, blk.Recommendation = matches, recommendation(matches)
			a.blk = &blk
		}
	}
	elapsed := time.Since(start)
	switch {
	case a.err != nil && errors.Is(a.err, context.DeadlineExceeded) && ctx.Err() != nil:
		return b.timedOut(ctx, out, tool, elapsed)
	case a.err != nil:
		b.metrics.Errors.Add(1)
		b.log.ErrorContext(ctx, "context bridge: reading trajectories failed; the result is returned without enrichment", "tool", tool, "error", a.err) // EHR-1
	default:
		b.metrics.Matches.Add(int64(len(a.blk.Matches)))
		out.ContextBridge = a.blk
	}
	return out
}

// current is matches (read at versions, beside them; 0 unknown) less
// those whose trajectory the store no longer holds at that version:
// deleted, or written again (restricted, say) since it was read. It is a
// new slice.
func (b *Bridge) current(ctx context.Context, matches []Match, versions []int) ([]Match, error) {
	out := slices.Clone(matches)
	if out == nil {
		out = []Match{}
	}
	if b.versions == nil || len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i, m := range out {
		ids[i] = m.TrajectoryID
	}
	now, err := b.versions.ItemVersions(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("checking that the matched trajectories are current: %w", err)
	}
	kept := out[:0]
	for i, m := range out {
		if v, ok := now[m.TrajectoryID]; ok && (i >= len(versions) || versions[i] == 0 || versions[i] == v) {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// timedOut is the bridge contract's degraded answer when the enrichment, its
// wait for a turn included, outlasted the timeout (EHR-2).
func (b *Bridge) timedOut(ctx context.Context, out Response, tool string, elapsed time.Duration) Response {
	b.metrics.Timeouts.Add(1)
	b.log.WarnContext(ctx, "context bridge timed out", "tool", tool, "elapsed", elapsed)
	out.ContextBridge = &Block{Version: Version, Status: "degraded", Reason: "timeout",
		Detail: fmt.Sprintf("Context bridge timeout exceeded (%s)", b.cfg.Timeout), Matches: []Match{}, SimilarityMode: b.mode()}
	return out
}

func (b *Bridge) mode() string {
	if b.embedder != nil {
		return "hybrid"
	}
	return "concept_only"
}

// cacheKey is the fingerprint and everything that decides what the caller
// may see, the policy's revision included, so that a cached answer never
// crosses clearances nor outlives the policy it was decided by. Each part
// is length-prefixed, so that no two keys' parts run together.
func cacheKey(fingerprint string, spec h4r.Specialist, revision string) string {
	groups := slices.Clone(spec.AuthorizedGroups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	var k strings.Builder
	for _, part := range append([]string{fingerprint, revision, spec.Type, spec.ID, spec.SecurityLevel.String()}, groups...) {
		k.WriteString(strconv.Itoa(len(part)))
		k.WriteByte(':')
		k.WriteString(part)
	}
	return k.String()
}

// earlyReader is a Source that can stop reading once it has delivered
// enough candidates unredacted, with scores by the extractor scoredBy
// returns (IndexSource).
type earlyReader interface {
	candidatesUpTo(ctx context.Context, spec h4r.Specialist, sig *Signature, limit, enough int) ([]Candidate, error)
	scoredBy() ConceptExtractor
}

// read is match's answer, and whether it may be cached (complete: the
// embedding did not fail).
type read struct {
	answer
	cacheable bool
}

// match reads candidates and scores them.
func (b *Bridge) match(ctx context.Context, spec h4r.Specialist, sig *Signature) read {
	var cands []Candidate
	var err error
	// The best MaxMatches candidates delivered unredacted are the answer
	// when their scores are the ones match keeps: concept-only, by the
	// index's own extractor.
	if er, ok := b.source.(earlyReader); ok && b.embedder == nil && sameExtractor(er.scoredBy(), b.extractor) {
		cands, err = er.candidatesUpTo(ctx, spec, sig, candidateLimit, b.cfg.MaxMatches)
	} else {
		cands, err = b.source.Candidates(ctx, spec, sig, candidateLimit)
	}
	if err != nil {
		return read{answer: answer{err: err}}
	}
	sigs := make([]*Signature, len(cands))
	for i, c := range cands {
		switch {
		case c.sig == nil || !sameExtractor(c.sigBy, b.extractor):
			sigs[i] = signatureOf(c.Description, c.Domain, c.ToolSequence, b.extractor)
		case b.embedder != nil:
			s := *c.sig // a copy: embed sets its Embedding
			sigs[i] = &s
		default:
			sigs[i] = c.sig // read-only: concept similarity only reads it
		}
	}
	mode, embErr := "concept_only", error(nil)
	if b.embedder != nil && len(cands) > 0 {
		if embErr = b.embed(ctx, sig, cands, sigs); embErr == nil {
			mode = "hybrid"
		} else {
			b.metrics.EmbeddingFailures.Add(1)
			b.log.WarnContext(ctx, "context bridge: embedding failed; concept-only similarity", "error", embErr) // EHR-3
		}
	}
	// The best MaxMatches by rounded similarity, ties in candidate order:
	// the first MaxMatches of a stable sort of all, without building the
	// matches that would be cut (TestBestMatchesEqualStableSort).
	matches := make([]Match, 0, min(b.cfg.MaxMatches, len(cands)))
	for i, c := range cands {
		var sim float64
		switch {
		case mode != "hybrid" && c.scored && sigs[i] == c.sig:
			sim = c.score // 1 for the same text too
		case sigs[i].Fingerprint == sig.Fingerprint:
			sim = 1 // the same problem, word for word
		case mode == "hybrid":
			sim = HybridSimilarity(sig, sigs[i])
		default:
			sim = ConceptSimilarity(sig, sigs[i])
		}
		if sim < b.cfg.MinSimilarity {
			continue
		}
		matches = insertBest(matches, b.cfg.MaxMatches, round3(sim), func(sim float64) Match {
			return Match{TrajectoryID: c.TrajectoryID, SessionID: c.SessionID, Similarity: sim,
				Summary: c.Description, SuccessScore: c.SuccessScore, QualityScore: c.QualityScore}
		})
	}
	versions := make([]int, len(matches))
	for i, m := range matches {
		for _, c := range cands {
			if c.TrajectoryID == m.TrajectoryID {
				versions[i] = c.Version
				break
			}
		}
	}
	blk := b.block(matches, mode)
	if embErr != nil {
		blk.EmbeddingStatus, blk.EmbeddingError = "failed", embErr.Error()
		return read{answer: answer{blk: blk, versions: versions}} // not cached: the next call may embed
	}
	return read{answer: answer{blk: blk, versions: versions}, cacheable: true}
}

// insertBest puts the match of similarity sim (made by match) into best,
// which holds at most k matches by descending similarity, after those of
// the same similarity; it is left out if it would come past k.
func insertBest(best []Match, k int, sim float64, match func(float64) Match) []Match {
	at := len(best)
	for at > 0 && best[at-1].Similarity < sim {
		at--
	}
	if at >= k {
		return best
	}
	if len(best) < k {
		best = append(best, Match{})
	}
	copy(best[at+1:], best[at:len(best)-1])
	best[at] = match(sim)
	return best
}

// embed embeds the call and the candidates in one batch under the
// embedding timeout.
func (b *Bridge) embed(ctx context.Context, sig *Signature, cands []Candidate, sigs []*Signature) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.EmbedTimeout)
	defer cancel()
	texts := make([]string, 0, len(cands)+1)
	texts = append(texts, sig.Text)
	for _, c := range cands {
		texts = append(texts, c.Description)
	}
	vecs, err := b.embedder.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	sig.Embedding = vecs[0]
	for i := range sigs {
		sigs[i].Embedding = vecs[i+1]
	}
	return nil
}

func (b *Bridge) block(matches []Match, mode string) *Block {
	return &Block{Version: Version, Matches: matches, Recommendation: recommendation(matches), SimilarityMode: mode}
}

// recommendation is the bridge contract's reading of the matches' success.
func recommendation(matches []Match) string {
	if len(matches) == 0 {
		return ""
	}
	var avg float64
	for _, m := range matches {
		avg += m.SuccessScore
	}
	avg /= float64(len(matches))
	switch {
	case avg > 0.8:
		return "Similar past reasoning had high success rates."
	case avg < 0.4:
		return "Similar past reasoning had low success rates - consider alternative approaches."
	}
	return "Related past sessions found."
}

// sameExtractor reports whether a and b are the same extractor, so give
// the same concepts: equal values of one comparable type.
func sameExtractor(a, b ConceptExtractor) bool {
	ta := reflect.TypeOf(a)
	return ta != nil && ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

func round3(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }
