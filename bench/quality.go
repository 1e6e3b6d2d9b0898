package bench

import (
	"slices"
)

// QualitySchema names the version of the quality report's JSON shape; a
// change that is not an addition bumps it.
const QualitySchema = "h4r.bench.quality/v1"

// Metrics are the ranking metrics of one query, or their means.
type Metrics struct {
	NDCG10    float64 `json:"ndcg@10"`
	MRR10     float64 `json:"mrr@10"`
	Recall10  float64 `json:"recall@10"`
	Recall100 float64 `json:"recall@100"`
}

// Score computes the metrics of a ranking against its judgments.
func Score(ranked []string, judged Judgments) Metrics {
	return Metrics{
		NDCG10:    NDCG(ranked, judged, 10),
		MRR10:     MRR(ranked, judged, 10),
		Recall10:  Recall(ranked, judged, 10),
		Recall100: Recall(ranked, judged, 100),
	}
}

func (m *Metrics) add(o Metrics) {
	m.NDCG10 += o.NDCG10
	m.MRR10 += o.MRR10
	m.Recall10 += o.Recall10
	m.Recall100 += o.Recall100
}

func (m Metrics) scale(f float64) Metrics {
	return Metrics{m.NDCG10 * f, m.MRR10 * f, m.Recall10 * f, m.Recall100 * f}
}

// QueryResult is one query's line in the per-query file, for error analysis.
type QueryResult struct {
	Dataset    string   `json:"dataset"`
	ID         string   `json:"id"`
	Category   string   `json:"category,omitempty"`
	Text       string   `json:"text"`
	Metrics    Metrics  `json:"metrics"`
	Candidates int      `json:"candidates"`
	Relevant   int      `json:"relevant"`           // judged relevant documents
	Top10      []string `json:"top10"`              // ids ranked 1–10
	Missed     []string `json:"missed,omitempty"`   // relevant ids not among the candidates at all
	Warnings   []string `json:"warnings,omitempty"` // from the pack
}

// GroupMetrics are the mean metrics of a set of queries.
type GroupMetrics struct {
	Group   string  `json:"group"`
	Queries int     `json:"queries"`
	Metrics Metrics `json:"metrics"`
}

// QualityReport is the result of one quality run on one dataset.
type QualityReport struct {
	Schema    string             `json:"schema"`
	Dataset   string             `json:"dataset"`
	Setup     string             `json:"setup,omitempty"` // "bm25": the relevance-only BM25 run beside another
	Store     string             `json:"store"`           // "sqlite" or "postgres"
	QueryType string             `json:"queryType"`
	Weights   map[string]float64 `json:"weights"`
	Lambda    float64            `json:"recencyDecayLambda"`
	// Conversation: conversation-aware retrieval was on (H4R_CONVERSATION).
	Conversation bool           `json:"conversation"`
	Docs         int            `json:"docs"`
	Queries      int            `json:"queries"`
	Degraded     int            `json:"degraded"` // queries whose pack was degraded (a generator failed or was late)
	Overall      Metrics        `json:"overall"`
	Groups       []GroupMetrics `json:"groups,omitempty"` // per query category, when the dataset has them
	Seconds      float64        `json:"seconds"`
	PerQuery     []QueryResult  `json:"-"` // written as its own JSONL file
}

// Evaluate scores every run against the dataset's judgments: the overall
// means, the means per query category, and a line per query.
func Evaluate(ds *Dataset, runs []QueryRun) (Metrics, []GroupMetrics, []QueryResult) {
	var overall Metrics
	type acc struct {
		sum Metrics
		n   int
	}
	groups := map[string]*acc{}
	per := make([]QueryResult, len(runs))
	for i, r := range runs {
		ids := r.RankedIDs()
		judged := ds.Qrels[r.Query.ID]
		m := Score(ids, judged)
		overall.add(m)
		if c := r.Query.Category; c != "" {
			if groups[c] == nil {
				groups[c] = &acc{}
			}
			groups[c].sum.add(m)
			groups[c].n++
		}
		found := make(map[string]bool, len(ids))
		for _, id := range ids {
			found[id] = true
		}
		qr := QueryResult{Dataset: ds.Name, ID: r.Query.ID, Category: r.Query.Category, Text: r.Query.Text,
			Metrics: m, Candidates: len(ids), Top10: ids[:min(10, len(ids))], Warnings: r.Warn}
		for id, g := range judged {
			if g > 0 {
				qr.Relevant++
				if !found[id] {
					qr.Missed = append(qr.Missed, id)
				}
			}
		}
		slices.Sort(qr.Missed)
		per[i] = qr
	}
	if len(runs) > 0 {
		overall = overall.scale(1 / float64(len(runs)))
	}
	var gm []GroupMetrics
	for name, a := range groups {
		gm = append(gm, GroupMetrics{Group: name, Queries: a.n, Metrics: a.sum.scale(1 / float64(a.n))})
	}
	slices.SortFunc(gm, func(a, b GroupMetrics) int {
		if a.Group < b.Group {
			return -1
		}
		if a.Group > b.Group {
			return 1
		}
		return 0
	})
	return overall, gm, per
}
