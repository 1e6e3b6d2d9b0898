package qdranttest

import (
	"cmp"
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r/embed"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Server holds the collections. Filters follow Qdrant's documented
// semantics: a keyword match on a list matches when any element does,
// "keywords" is any-of, a range compares numbers only, nested keys are
// dotted paths, a missing key never matches. Lock Mu to read or change the
// fields.
type Server struct {
	Mu          sync.Mutex
	Collections map[string]*Collection
	APIKeys     []string // the api-key header of every call
	FailUpserts int      // the next this many Upserts fail with Unavailable
	FailQueries int      // the next this many Queries fail with Unavailable
}

// The two services both have Get and Delete methods: one type each.
type (
	collectionsService struct {
		qc.UnimplementedCollectionsServer
		*Server
	}
	pointsService struct {
		qc.UnimplementedPointsServer
		*Server
	}
)

// Collection is one collection: its vector parameters, indexed payload
// fields and points.
type Collection struct {
	Size     uint64
	Distance qc.Distance
	Indexed  map[string]qc.FieldType
	Points   map[string]*qc.PointStruct // by UUID
}

// Start serves a Server on 127.0.0.1 until t ends and returns it and its
// URL (for QDRANT_URL).
func Start(t testing.TB) (*Server, string) {
	t.Helper()
	f := &Server{Collections: map[string]*Collection{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		f.Mu.Lock()
		f.APIKeys = append(f.APIKeys, strings.Join(md.Get("api-key"), ","))
		f.Mu.Unlock()
		return h(ctx, req)
	}))
	qc.RegisterCollectionsServer(srv, collectionsService{Server: f})
	qc.RegisterPointsServer(srv, pointsService{Server: f})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return f, "http://" + lis.Addr().String()
}

func (f *Server) collection(name string) (*Collection, error) {
	c := f.Collections[name]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

func (f collectionsService) CollectionExists(_ context.Context, r *qc.CollectionExistsRequest) (*qc.CollectionExistsResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	_, ok := f.Collections[r.GetCollectionName()]
	return &qc.CollectionExistsResponse{Result: &qc.CollectionExists{Exists: ok}}, nil
}

func (f collectionsService) Get(_ context.Context, r *qc.GetCollectionInfoRequest) (*qc.GetCollectionInfoResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c, err := f.collection(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	params := &qc.CollectionParams{VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: c.Size, Distance: c.Distance})}
	return &qc.GetCollectionInfoResponse{Result: &qc.CollectionInfo{
		Status: qc.CollectionStatus_Green, Config: &qc.CollectionConfig{Params: params},
		PointsCount: qc.PtrOf(uint64(len(c.Points))),
	}}, nil
}

func (f collectionsService) Create(_ context.Context, r *qc.CreateCollection) (*qc.CollectionOperationResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if _, ok := f.Collections[r.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Collection `%s` already exists!", r.GetCollectionName())
	}
	p := r.GetVectorsConfig().GetParams()
	if p == nil || p.GetSize() == 0 {
		return nil, status.Error(codes.InvalidArgument, "vectors config with a size is required")
	}
	f.Collections[r.GetCollectionName()] = &Collection{Size: p.GetSize(), Distance: p.GetDistance(),
		Indexed: map[string]qc.FieldType{}, Points: map[string]*qc.PointStruct{}}
	return &qc.CollectionOperationResponse{Result: true}, nil
}

func (f pointsService) CreateFieldIndex(_ context.Context, r *qc.CreateFieldIndexCollection) (*qc.PointsOperationResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c, err := f.collection(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	c.Indexed[r.GetFieldName()] = r.GetFieldType()
	return &qc.PointsOperationResponse{Result: &qc.UpdateResult{Status: qc.UpdateStatus_Completed}}, nil
}

func (f pointsService) Upsert(_ context.Context, r *qc.UpsertPoints) (*qc.PointsOperationResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.FailUpserts > 0 {
		f.FailUpserts--
		return nil, status.Error(codes.Unavailable, "service unavailable")
	}
	c, err := f.collection(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	for _, p := range r.GetPoints() {
		v := p.GetVectors().GetVector().GetDense().GetData()
		if uint64(len(v)) != c.Size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.Size, len(v))
		}
		if p.GetId().GetUuid() == "" {
			return nil, status.Error(codes.InvalidArgument, "point id must be a UUID here")
		}
		c.Points[p.GetId().GetUuid()] = p
	}
	return &qc.PointsOperationResponse{Result: &qc.UpdateResult{Status: qc.UpdateStatus_Completed}}, nil
}

func (f pointsService) Delete(_ context.Context, r *qc.DeletePoints) (*qc.PointsOperationResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c, err := f.collection(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if filter := r.GetPoints().GetFilter(); filter != nil {
		for id, p := range c.Points {
			if matchFilter(filter, p.GetPayload()) {
				delete(c.Points, id)
			}
		}
	}
	for _, id := range r.GetPoints().GetPoints().GetIds() {
		delete(c.Points, id.GetUuid())
	}
	return &qc.PointsOperationResponse{Result: &qc.UpdateResult{Status: qc.UpdateStatus_Completed}}, nil
}

func (f pointsService) Query(_ context.Context, r *qc.QueryPoints) (*qc.QueryResponse, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.FailQueries > 0 {
		f.FailQueries--
		return nil, status.Error(codes.Unavailable, "service unavailable")
	}
	c, err := f.collection(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	q := r.GetQuery().GetNearest().GetDense().GetData()
	if uint64(len(q)) != c.Size {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.Size, len(q))
	}
	var out []*qc.ScoredPoint
	for _, p := range c.Points {
		if r.Filter != nil && !matchFilter(r.GetFilter(), p.GetPayload()) {
			continue
		}
		score := float32(embed.Cosine(q, p.GetVectors().GetVector().GetDense().GetData()))
		if r.ScoreThreshold != nil && score < r.GetScoreThreshold() {
			continue
		}
		out = append(out, &qc.ScoredPoint{Id: p.GetId(), Score: score, Payload: selectPayload(r.GetWithPayload(), p.GetPayload())})
	}
	slices.SortFunc(out, func(a, b *qc.ScoredPoint) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId().GetUuid(), b.GetId().GetUuid())
	})
	limit := uint64(10) // Qdrant's default
	if r.Limit != nil {
		limit = r.GetLimit()
	}
	if uint64(len(out)) > limit {
		out = out[:limit]
	}
	return &qc.QueryResponse{Result: out}, nil
}

func selectPayload(sel *qc.WithPayloadSelector, payload map[string]*qc.Value) map[string]*qc.Value {
	if inc := sel.GetInclude(); inc != nil {
		out := map[string]*qc.Value{}
		for _, k := range inc.GetFields() {
			if v, ok := payload[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	if sel.GetEnable() {
		return payload
	}
	return nil
}

// matchFilter: every must, no must_not, and at least one should (if any).
func matchFilter(f *qc.Filter, payload map[string]*qc.Value) bool {
	for _, c := range f.GetMust() {
		if !matchCondition(c, payload) {
			return false
		}
	}
	for _, c := range f.GetMustNot() {
		if matchCondition(c, payload) {
			return false
		}
	}
	if len(f.GetShould()) == 0 {
		return true
	}
	for _, c := range f.GetShould() {
		if matchCondition(c, payload) {
			return true
		}
	}
	return false
}

func matchCondition(c *qc.Condition, payload map[string]*qc.Value) bool {
	if sub := c.GetFilter(); sub != nil {
		return matchFilter(sub, payload)
	}
	fc := c.GetField()
	if fc == nil {
		panic("fake Qdrant: condition kind not implemented") // H4R sends only field conditions
	}
	values := lookup(payload, fc.GetKey())
	for _, v := range values {
		if m := fc.GetMatch(); m != nil && matchValue(m, v) {
			return true
		}
		if r := fc.GetRange(); r != nil && inRange(r, v) {
			return true
		}
	}
	return false
}

// lookup follows a dotted key; a list at the end contributes its elements.
func lookup(payload map[string]*qc.Value, key string) []*qc.Value {
	parts := strings.Split(key, ".")
	v, ok := payload[parts[0]]
	if !ok {
		return nil
	}
	for _, p := range parts[1:] {
		s := v.GetStructValue()
		if s == nil {
			return nil
		}
		if v, ok = s.GetFields()[p]; !ok {
			return nil
		}
	}
	if l := v.GetListValue(); l != nil {
		return l.GetValues()
	}
	return []*qc.Value{v}
}

func matchValue(m *qc.Match, v *qc.Value) bool {
	switch x := m.GetMatchValue().(type) {
	case *qc.Match_Keyword:
		s, ok := v.GetKind().(*qc.Value_StringValue)
		return ok && s.StringValue == x.Keyword
	case *qc.Match_Keywords:
		s, ok := v.GetKind().(*qc.Value_StringValue)
		return ok && slices.Contains(x.Keywords.GetStrings(), s.StringValue)
	case *qc.Match_Boolean:
		b, ok := v.GetKind().(*qc.Value_BoolValue)
		return ok && b.BoolValue == x.Boolean
	case *qc.Match_Integer:
		i, ok := v.GetKind().(*qc.Value_IntegerValue)
		return ok && i.IntegerValue == x.Integer
	}
	panic("fake Qdrant: match kind not implemented")
}

func inRange(r *qc.Range, v *qc.Value) bool {
	var x float64
	switch n := v.GetKind().(type) {
	case *qc.Value_DoubleValue:
		x = n.DoubleValue
	case *qc.Value_IntegerValue:
		x = float64(n.IntegerValue)
	default:
		return false
	}
	return (r.Gt == nil || x > r.GetGt()) && (r.Gte == nil || x >= r.GetGte()) &&
		(r.Lt == nil || x < r.GetLt()) && (r.Lte == nil || x <= r.GetLte())
}

// PointCount returns the points in collection.
func (f *Server) PointCount(collection string) int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if c := f.Collections[collection]; c != nil {
		return len(c.Points)
	}
	return 0
}
