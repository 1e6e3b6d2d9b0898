package qdrant

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"

	"github.com/h4r/h4r"
)

// Ports of a Qdrant server: QDRANT_URL may name the REST port by habit;
// the client speaks gRPC.
const (
	grpcPort = 6334
	restPort = 6333
)

// Payload keys.
const (
	keyID        = "h4r_id"
	keyModel     = "h4r_model"
	keyKind      = "kind"
	keyTags      = "tags"
	keyCreatedAt = "createdAt" // Unix seconds, fractional
	keyMetadata  = "metadata"
)

// defaultSearchLimit is the hits of a search whose query gives no limit.
const defaultSearchLimit = 100

// ItemGetter reads items from the store, the source of truth (app.Store).
type ItemGetter interface {
	Get(ctx context.Context, id string) (*h4r.Item, error)
}

// Index is one Qdrant collection of item vectors. It is safe for
// concurrent use.
type Index struct {
	client     *qc.Client
	collection string
	dim        int
	items      ItemGetter
	log        *slog.Logger
}

// Option configures Open.
type Option func(*options)

type options struct {
	apiKey     string
	collection string
	dim        int
	items      ItemGetter
	log        *slog.Logger
	dial       []grpc.DialOption
}

// WithAPIKey sets the key sent with every call (QDRANT_API_KEY).
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithCollection sets the collection (default "h4r_items").
func WithCollection(name string) Option { return func(o *options) { o.collection = name } }

// WithDimension sets the dimension of the vectors (required): the
// embedder's.
func WithDimension(n int) Option { return func(o *options) { o.dim = n } }

// WithItems sets where search hits are read from (required for search).
func WithItems(g ItemGetter) Option { return func(o *options) { o.items = g } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithDialOptions adds gRPC dial options (tests; TLS settings).
func WithDialOptions(d ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, d...) }
}

// Open connects to the Qdrant server at rawURL (http://host:6334, or
// https for TLS; the REST port 6333 is taken to mean the gRPC port 6334 of
// the same server) and bootstraps the collection.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Index, error) {
	o := options{collection: "h4r_items", log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.dim <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "dimension", "vector dimension must be positive, got %d", o.dim)
	case strings.TrimSpace(o.collection) == "":
		return nil, h4r.Errorf(h4r.EINVALID, "collection", "collection name is required")
	case o.log == nil:
		return nil, h4r.Errorf(h4r.EINVALID, "logger", "logger must not be nil")
	}
	host, port, useTLS, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if port == restPort {
		o.log.WarnContext(ctx, "QDRANT_URL names Qdrant's REST port; H4R speaks gRPC and uses port 6334", "url", rawURL)
		port = grpcPort
	}
	client, err := qc.NewClient(&qc.Config{
		Host: host, Port: port, APIKey: o.apiKey, UseTLS: useTLS,
		SkipCompatibilityCheck: true, // the check blocks up to a minute when the server is down
		PoolSize:               1,
		GrpcOptions:            o.dial,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to Qdrant at %s: %w", rawURL, err)
	}
	ix := &Index{client: client, collection: o.collection, dim: o.dim, items: o.items, log: o.log}
	if err := ix.bootstrap(ctx); err != nil {
		return nil, errors.Join(err, client.Close())
	}
	return ix, nil
}

// parseURL splits QDRANT_URL into host, port and whether to use TLS.
func parseURL(raw string) (string, int, bool, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", 0, false, h4r.Errorf(h4r.EINVALID, "QDRANT_URL", "want http://host:6334 or https://host:6334, got %q", raw)
	}
	port := grpcPort
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, false, h4r.Errorf(h4r.EINVALID, "QDRANT_URL", "invalid port %q", p)
		}
		port = n
	}
	return u.Hostname(), port, u.Scheme == "https", nil
}

// bootstrap creates the collection, or checks that the existing one holds
// vectors this index can use.
func (ix *Index) bootstrap(ctx context.Context) error {
	exists, err := ix.client.CollectionExists(ctx, ix.collection)
	if err != nil {
		return fmt.Errorf("checking Qdrant collection %q: %w", ix.collection, err)
	}
	if exists {
		info, err := ix.client.GetCollectionInfo(ctx, ix.collection)
		if err != nil {
			return fmt.Errorf("reading Qdrant collection %q: %w", ix.collection, err)
		}
		params := info.GetConfig().GetParams().GetVectorsConfig().GetParams()
		switch {
		case params == nil:
			return fmt.Errorf("the Qdrant collection %q has named vectors; H4R needs one unnamed vector: set QDRANT_COLLECTION to another name", ix.collection)
		case params.GetSize() != uint64(ix.dim):
			return fmt.Errorf("the Qdrant collection %q holds vectors of %d dimensions, but the embedder makes %d: set QDRANT_COLLECTION to a new name (or delete the collection) and run h4r reindex",
				ix.collection, params.GetSize(), ix.dim)
		case params.GetDistance() != qc.Distance_Cosine:
			return fmt.Errorf("the Qdrant collection %q uses %s distance, H4R needs Cosine: set QDRANT_COLLECTION to a new name and run h4r reindex", ix.collection, params.GetDistance())
		}
		return nil
	}
	err = ix.client.CreateCollection(ctx, &qc.CreateCollection{
		CollectionName: ix.collection,
		VectorsConfig:  qc.NewVectorsConfig(&qc.VectorParams{Size: uint64(ix.dim), Distance: qc.Distance_Cosine}),
	})
	if err != nil {
		return fmt.Errorf("creating Qdrant collection %q: %w", ix.collection, err)
	}
	// Payload indexes make filtered search fast; metadata keys are open-ended
	// and are not indexed.
	for field, typ := range map[string]qc.FieldType{
		keyModel: qc.FieldType_FieldTypeKeyword, keyKind: qc.FieldType_FieldTypeKeyword,
		keyTags: qc.FieldType_FieldTypeKeyword, keyCreatedAt: qc.FieldType_FieldTypeFloat,
	} {
		if _, err := ix.client.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{
			CollectionName: ix.collection, FieldName: field, FieldType: qc.PtrOf(typ), Wait: qc.PtrOf(true),
		}); err != nil {
			return fmt.Errorf("indexing payload field %s of Qdrant collection %q: %w", field, ix.collection, err)
		}
	}
	ix.log.InfoContext(ctx, "created Qdrant collection", "collection", ix.collection, "dimension", ix.dim)
	return nil
}

// Close closes the connection.
func (ix *Index) Close() error { return ix.client.Close() }

// PointCount returns the points of the collection: the vectors Qdrant
// holds (GET /v1/stats' qdrant_vectors).
func (ix *Index) PointCount(ctx context.Context) (int, error) {
	info, err := ix.client.GetCollectionInfo(ctx, ix.collection)
	if err != nil {
		return 0, fmt.Errorf("reading Qdrant collection %q: %w", ix.collection, err)
	}
	return int(info.GetPointsCount()), nil
}

// Ping checks that Qdrant answers and the collection still exists
// (/health/ready).
func (ix *Index) Ping(ctx context.Context) error {
	exists, err := ix.client.CollectionExists(ctx, ix.collection)
	if err != nil {
		return fmt.Errorf("asking Qdrant for collection %q: %w", ix.collection, err)
	}
	if !exists {
		return fmt.Errorf("the Qdrant collection %q is gone", ix.collection)
	}
	return nil
}

// Dimension returns the dimension of the collection's vectors.
func (ix *Index) Dimension() int { return ix.dim }

// PointID is the Qdrant point id of an item id: a name-based UUID (version
// 5 layout over SHA-1), the same for one id in every process.
func PointID(itemID string) string {
	sum := sha1.Sum([]byte("h4r item\x00" + itemID))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Upsert writes the vectors of items (one per item, of model) with their
// payload, and waits for Qdrant to apply them.
func (ix *Index) Upsert(ctx context.Context, model string, items []*h4r.Item, vecs [][]float32) error {
	if len(items) != len(vecs) {
		return fmt.Errorf("upserting to Qdrant: %d items but %d vectors", len(items), len(vecs))
	}
	if len(items) == 0 {
		return nil
	}
	points := make([]*qc.PointStruct, len(items))
	for i, it := range items {
		if len(vecs[i]) != ix.dim {
			return fmt.Errorf("upserting item %q to Qdrant: vector has %d dimensions, the collection %d", it.ID, len(vecs[i]), ix.dim)
		}
		payload, err := Payload(model, it)
		if err != nil {
			return err
		}
		points[i] = &qc.PointStruct{Id: qc.NewID(PointID(it.ID)), Vectors: qc.NewVectorsDense(vecs[i]), Payload: payload}
	}
	if _, err := ix.client.Upsert(ctx, &qc.UpsertPoints{CollectionName: ix.collection, Wait: qc.PtrOf(true), Points: points}); err != nil {
		return fmt.Errorf("upserting %d points to Qdrant collection %q: %w", len(points), ix.collection, err)
	}
	return nil
}

// Payload returns the payload of an item's point.
func Payload(model string, it *h4r.Item) (map[string]*qc.Value, error) {
	meta, err := metadataMap(it)
	if err != nil {
		return nil, err
	}
	tags := make([]any, len(it.Metadata.Tags))
	for i, t := range it.Metadata.Tags {
		tags[i] = t
	}
	payload, err := qc.TryValueMap(map[string]any{
		keyID: it.ID, keyModel: model, keyKind: it.Kind, keyTags: tags,
		keyCreatedAt: unixSeconds(it.Metadata.CreatedAt), keyMetadata: meta,
	})
	if err != nil {
		return nil, fmt.Errorf("payload of item %q: %w", it.ID, err)
	}
	return payload, nil
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// metadataMap is the item's metadata as the flat JSON object policies and
// the SQLite store's filters see.
func metadataMap(it *h4r.Item) (map[string]any, error) {
	b, err := json.Marshal(it.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata of item %q: %w", it.ID, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("metadata of item %q: %w", it.ID, err)
	}
	return m, nil
}

// Delete removes the points of item ids; ids without a point are ignored.
func (ix *Index) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	pids := make([]*qc.PointId, len(ids))
	for i, id := range ids {
		pids[i] = qc.NewID(PointID(id))
	}
	if _, err := ix.client.Delete(ctx, &qc.DeletePoints{
		CollectionName: ix.collection, Wait: qc.PtrOf(true), Points: qc.NewPointsSelectorIDs(pids),
	}); err != nil {
		return fmt.Errorf("deleting %d points from Qdrant collection %q: %w", len(ids), ix.collection, err)
	}
	return nil
}

// DeleteOtherModels deletes the points of every model but model: after a
// rebuild with a new embedder, the old vectors are of no use.
func (ix *Index) DeleteOtherModels(ctx context.Context, model string) error {
	if _, err := ix.client.Delete(ctx, &qc.DeletePoints{
		CollectionName: ix.collection, Wait: qc.PtrOf(true),
		Points: qc.NewPointsSelectorFilter(&qc.Filter{MustNot: []*qc.Condition{qc.NewMatchKeyword(keyModel, model)}}),
	}); err != nil {
		return fmt.Errorf("deleting the points of other models from Qdrant collection %q: %w", ix.collection, err)
	}
	return nil
}

// maintainedKey reports metadata keys the store keeps current and the payload
// cannot (access counts change without a write): checked on the store's
// copy only.
func maintainedKey(key string) bool {
	switch key {
	case "version", "accessCount", "byteSize", "tokens", "updatedAt", "lastAccessedAt":
		return true
	}
	return false
}

// Filter returns the Qdrant filter of a search among model's vectors that
// is equivalent to f, store-maintained keys aside: kinds as any-of, each
// tag required, one of anyTags required, the createdAt range half-open (widened by a microsecond,
// since it is compared as float seconds; the exact test runs on the store's
// copy), and each metadata key equal in value and JSON type.
func Filter(model string, f h4r.Filters) *qc.Filter {
	must := []*qc.Condition{qc.NewMatchKeyword(keyModel, model)}
	if len(f.Kinds) > 0 {
		must = append(must, qc.NewMatchKeywords(keyKind, f.Kinds...))
	}
	tags := slices.Clone(f.Tags)
	slices.Sort(tags)
	for _, t := range slices.Compact(tags) {
		must = append(must, qc.NewMatchKeyword(keyTags, t))
	}
	if len(f.AnyTags) > 0 {
		// A keywords match on a list payload passes when any element is
		// one of them.
		must = append(must, qc.NewMatchKeywords(keyTags, f.AnyTags...))
	}
	if !f.CreatedAfter.IsZero() || !f.CreatedBefore.IsZero() {
		r := &qc.Range{}
		if !f.CreatedAfter.IsZero() {
			r.Gte = qc.PtrOf(unixSeconds(f.CreatedAfter) - 1e-6)
		}
		if !f.CreatedBefore.IsZero() {
			r.Lt = qc.PtrOf(unixSeconds(f.CreatedBefore) + 1e-6)
		}
		must = append(must, qc.NewRange(keyCreatedAt, r))
	}
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if maintainedKey(k) {
			continue
		}
		field := keyMetadata + "." + k
		switch v := f.Metadata[k].(type) {
		case string:
			must = append(must, qc.NewMatchKeyword(field, v))
		case bool:
			must = append(must, qc.NewMatchBool(field, v))
		case float64:
			must = append(must, qc.NewRange(field, &qc.Range{Gte: qc.PtrOf(v), Lte: qc.PtrOf(v)}))
		case int:
			must = append(must, qc.NewRange(field, &qc.Range{Gte: qc.PtrOf(float64(v)), Lte: qc.PtrOf(float64(v))}))
		}
	}
	return &qc.Filter{Must: must}
}

// SearchVectors returns the items nearest to vector among model's points
// that pass filters, best first, with Qdrant's cosine as Score, at least
// minScore. Items are read from the store; one deleted meanwhile, or that
// fails a filter on its current values, is left out.
func (ix *Index) SearchVectors(ctx context.Context, model string, vector []float32, filters h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error) {
	if ix.items == nil {
		return nil, errors.New("searching Qdrant: no item store (WithItems)")
	}
	limit, err := h4r.HitLimit(limit, defaultSearchLimit)
	if err != nil {
		return nil, err
	}
	if len(vector) != ix.dim {
		return nil, h4r.Errorf(h4r.EINVALID, "vector", "query vector has %d dimensions, the Qdrant collection %d", len(vector), ix.dim)
	}
	if math.IsNaN(minScore) {
		return nil, h4r.Errorf(h4r.EINVALID, "minScore", "minimum score must be a number")
	}
	points, err := ix.client.Query(ctx, &qc.QueryPoints{
		CollectionName: ix.collection,
		Query:          qc.NewQueryDense(vector),
		Filter:         Filter(model, filters),
		Limit:          qc.PtrOf(uint64(limit)),
		ScoreThreshold: qc.PtrOf(float32(minScore)),
		WithPayload:    qc.NewWithPayloadInclude(keyID),
	})
	if err != nil {
		return nil, fmt.Errorf("searching Qdrant collection %q: %w", ix.collection, err)
	}
	items, err := ix.hydrate(ctx, points)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(points))
	for i, p := range points {
		it := items[i]
		if it == nil {
			continue // deleted from the store; the mirror deletes the point
		}
		if ok, err := Matches(filters, it); err != nil || !ok {
			continue
		}
		hits = append(hits, h4r.Hit{Item: it, Score: float64(p.GetScore())})
	}
	return hits, nil
}

// hydrateConcurrency bounds the store reads of one search's hits: the store
// reads one item at a time, and the SQLite store has four readers.
const hydrateConcurrency = 4

// hydrate reads the items of points from the store, concurrently, in
// order; an item the store no longer has is nil.
func (ix *Index) hydrate(ctx context.Context, points []*qc.ScoredPoint) ([]*h4r.Item, error) {
	items := make([]*h4r.Item, len(points))
	errs := make([]error, len(points))
	sem := make(chan struct{}, hydrateConcurrency)
	var wg sync.WaitGroup
	for i, p := range points {
		id := p.GetPayload()[keyID].GetStringValue()
		if id == "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			it, err := ix.items.Get(ctx, id)
			switch {
			case h4r.ErrorCode(err) == h4r.ENOTFOUND:
			case err != nil:
				errs[i] = fmt.Errorf("reading Qdrant hit %q from the store: %w", id, err)
			default:
				items[i] = it
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return items, nil
}

// Matches reports whether it passes f, with the SQLite store's semantics:
// kind in Kinds, every tag present, one of AnyTags present, CreatedAfter <= createdAt <
// CreatedBefore, and each metadata key present with an equal value of the
// same JSON type.
func Matches(f h4r.Filters, it *h4r.Item) (bool, error) {
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, it.Kind) {
		return false, nil
	}
	for _, t := range f.Tags {
		if !slices.Contains(it.Metadata.Tags, t) {
			return false, nil
		}
	}
	if len(f.AnyTags) > 0 && !slices.ContainsFunc(f.AnyTags, func(t string) bool { return slices.Contains(it.Metadata.Tags, t) }) {
		return false, nil
	}
	c := it.Metadata.CreatedAt
	if !f.CreatedAfter.IsZero() && c.Before(f.CreatedAfter) || !f.CreatedBefore.IsZero() && !c.Before(f.CreatedBefore) {
		return false, nil
	}
	if len(f.Metadata) == 0 {
		return true, nil
	}
	meta, err := metadataMap(it)
	if err != nil {
		return false, err
	}
	for k, want := range f.Metadata {
		got, ok := meta[k]
		if !ok {
			return false, nil
		}
		switch w := want.(type) {
		case int:
			want = float64(w)
		case int64:
			want = float64(w)
		}
		if got != want { // JSON decoding gives string, float64 or bool: types must agree
			return false, nil
		}
	}
	return true, nil
}
