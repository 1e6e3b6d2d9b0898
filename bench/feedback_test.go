package bench_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
)

func TestFeedbackDataset(t *testing.T) {
	fb := []h4r.Feedback{
		{PackID: "p1", Verdict: h4r.VerdictWrong, Query: "q one", ResultIDs: []string{"a", "b"}},
		{PackID: "p1", Verdict: h4r.VerdictUseful, Query: "q one", ResultIDs: []string{"a", "b"}}, // latest wins
		{PackID: "p2", Verdict: h4r.VerdictPartial, Query: "q two", ResultIDs: []string{"c"}},
		{PackID: "p3", Verdict: h4r.VerdictUseful, Query: "q three", ResultIDs: []string{"d"}},
		{PackID: "p3", Verdict: h4r.VerdictWrong, Query: "q three", ResultIDs: []string{"d"}}, // no relevant item left
		{PackID: "p4", Verdict: h4r.VerdictUseful, Query: "q four"},                           // nothing delivered
	}
	each := func(_ context.Context, fn func(h4r.Feedback) error) error {
		for _, f := range fb {
			if err := fn(f); err != nil {
				return err
			}
		}
		return nil
	}
	ds, err := bench.FeedbackDataset(t.Context(), each, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Queries) != 2 || ds.Queries[0].ID != "p1" || ds.Queries[0].Text != "q one" || ds.Queries[1].ID != "p2" {
		t.Fatalf("queries = %+v", ds.Queries)
	}
	want := map[string]bench.Judgments{"p1": {"a": 2, "b": 2}, "p2": {"c": 1}}
	if !maps.EqualFunc(ds.Qrels, want, maps.Equal) {
		t.Errorf("qrels = %v, want %v", ds.Qrels, want)
	}
	bad := func(_ context.Context, fn func(h4r.Feedback) error) error {
		return fn(h4r.Feedback{PackID: "x", Verdict: "great"})
	}
	if _, err := bench.FeedbackDataset(t.Context(), bad, time.Now()); err == nil {
		t.Error("an unknown verdict was accepted")
	}
}
