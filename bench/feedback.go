package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/h4r/h4r"
)

// FeedbackDatasetName names the labels read from stored feedback.
const FeedbackDatasetName = "feedback"

// Grades of the items of a pack by its latest verdict: useful packs'
// items are relevant (2), partial packs' somewhat (1). A wrong pack's
// items are judged not relevant (0), which nDCG cannot reward, so a query
// whose only verdicts are wrong has no relevant item and is left out.
var verdictGrade = map[string]int{h4r.VerdictUseful: 2, h4r.VerdictPartial: 1, h4r.VerdictWrong: 0}

// FeedbackDataset turns stored feedback (POST /feedback) into a labelled
// dataset over the store it was given on: one query per judged pack (its
// query text), the pack's delivered items graded by the pack's latest
// verdict. The documents are the store's own, so the dataset has none;
// ages are unknown and the tuner sees every candidate as new (λ is not
// learnt from feedback). each is app.App.EachFeedback.
func FeedbackDataset(ctx context.Context, each func(ctx context.Context, fn func(h4r.Feedback) error) error, now time.Time) (*Dataset, error) {
	latest := map[string]h4r.Feedback{}
	var order []string
	err := each(ctx, func(f h4r.Feedback) error {
		if _, ok := verdictGrade[f.Verdict]; !ok {
			return fmt.Errorf("feedback on %s: unknown verdict %q", f.PackID, f.Verdict)
		}
		if _, seen := latest[f.PackID]; !seen {
			order = append(order, f.PackID)
		}
		latest[f.PackID] = f // oldest first: the last one read is the latest
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading feedback: %w", err)
	}
	ds := &Dataset{Name: FeedbackDatasetName, Now: now, Qrels: map[string]Judgments{}}
	for _, id := range order {
		f := latest[id]
		g := verdictGrade[f.Verdict]
		if g == 0 || len(f.ResultIDs) == 0 || f.Query == "" {
			continue
		}
		j := Judgments{}
		for _, item := range f.ResultIDs {
			j[item] = g
		}
		ds.Queries = append(ds.Queries, Query{ID: f.PackID, Text: f.Query})
		ds.Qrels[f.PackID] = j
	}
	return ds, nil
}
