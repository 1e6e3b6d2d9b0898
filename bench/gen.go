package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Synthetic categories: each isolates one signal. In every category the
// right answer and its confusers differ only in that signal, and the
// confusers match the query text a little better (the same words, one
// filler word shorter), so relevance alone ranks them wrong and only the
// category's signal can put the right one first. A little, not twice: an
// outdated version, a low-trust copy or a speculative note matches a
// question about as well as the right one. When confusers matched the
// topic twice against the right answer's once, every metadata signal had
// to outweigh a clear text advantage, so together they outweighed any:
// the tuned weights let recent, important items that barely matched
// outrank the matching ones (the demo corpus's labelled queries, 0.844
// against relevance-only's 0.909).
const (
	CatRelevance   = "relevance"   // the right item matches the query best; every other signal is noise
	CatRecency     = "recency"     // knowledge updated twice: the newest version is right
	CatTrust       = "trust"       // low-trust decoys (trust 0.35, above policy's 0.3) match better
	CatCausality   = "causality"   // the root cause is two hops from the symptoms and barely matches
	CatFrequency   = "frequency"   // near-duplicates; only the often-used one is right
	CatImportance  = "importance"  // unimportant near-duplicates match better
	CatNovelty     = "novelty"     // speculative (novelty 0.9) near-duplicates match better
	CatSensitivity = "sensitivity" // a sensitive near-duplicate (0.65, under policy's 0.7) matches better
)

// GenCategories lists the categories in generation order.
func GenCategories() []string {
	return []string{CatRelevance, CatRecency, CatTrust, CatCausality, CatFrequency, CatImportance, CatNovelty, CatSensitivity}
}

// GenOptions configure Generate.
type GenOptions struct {
	Seed        uint64
	PerCategory int       // queries per category
	Noise       int       // unrelated items per query scope
	Now         time.Time // the dataset's clock
}

// genDoc is one corpus line of the synthetic set.
type genDoc struct {
	ID          string    `json:"_id"`
	Title       string    `json:"title"`
	Text        string    `json:"text"`
	CreatedAt   string    `json:"createdAt"`
	Importance  float64   `json:"importance"`
	Trust       float64   `json:"trust"`
	Sensitivity float64   `json:"sensitivity"`
	Novelty     float64   `json:"novelty"`
	AccessCount int       `json:"accessCount"`
	Links       []genLink `json:"links,omitempty"`
	Scope       string    `json:"scope"`
	Session     string    `json:"session,omitempty"`
}

type genLink struct {
	Target string `json:"target"`
	Type   string `json:"type"`
}

type genQuery struct {
	ID       string `json:"_id"`
	Text     string `json:"text"`
	Scope    string `json:"scope"`
	Category string `json:"category"`
	Date     string `json:"date,omitempty"` // when the question is asked
}

type genJudgment struct {
	query, doc string
	grade      int
}

// generator holds one generation's state; nothing outlives Generate.
type generator struct {
	rng   *rand.Rand
	opts  GenOptions
	docs  []genDoc
	qs    []genQuery
	qrels []genJudgment
	used  map[string]bool
}

// GenMapping is the mapping file written beside a synthetic dataset.
func GenMapping(now time.Time) Mapping {
	return Mapping{Version: MappingVersion, CreatedAt: "createdAt", Links: "links", LinkType: "caused_by",
		Importance: "importance", Trust: "trust", Sensitivity: "sensitivity", Novelty: "novelty",
		AccessCount: "accessCount", Scope: "scope", Category: "category", Now: now.Format(time.RFC3339)}
}

// Generate writes a synthetic agent-memory dataset in BEIR layout to dir:
// corpus.jsonl, queries.jsonl, qrels/test.tsv and h4r-mapping.json. The
// same options always write the same bytes.
func Generate(dir string, o GenOptions) error {
	if o.PerCategory <= 0 {
		return fmt.Errorf("gen: queries per category must be positive, got %d", o.PerCategory)
	}
	if o.Now.IsZero() {
		o.Now = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	g := &generator{rng: rand.New(rand.NewPCG(o.Seed, 0x67656e)), opts: o, used: map[string]bool{}}
	n := 0
	for _, cat := range GenCategories() {
		for range o.PerCategory {
			n++
			g.scope(fmt.Sprintf("q%04d", n), cat)
		}
	}
	return g.write(dir, GenMapping(o.Now))
}

// word makes a pronounceable nonsense word not used before, so that topics
// never collide.
func (g *generator) word() string {
	cons := "bdfgklmnprstvz"
	vows := "aeiou"
	for {
		var b strings.Builder
		for range 3 {
			b.WriteByte(cons[g.rng.IntN(len(cons))])
			b.WriteByte(vows[g.rng.IntN(len(vows))])
		}
		b.WriteByte(cons[g.rng.IntN(len(cons))])
		if w := b.String(); !g.used[w] {
			g.used[w] = true
			return w
		}
	}
}

// filler returns n common words: they appear everywhere, as in real memory.
func (g *generator) filler(n int) string {
	common := []string{"the", "team", "service", "note", "when", "after", "deploy", "config", "check", "agent", "build", "value", "update", "issue", "run", "step"}
	w := make([]string, n)
	for i := range w {
		w[i] = common[g.rng.IntN(len(common))]
	}
	return strings.Join(w, " ")
}

// base is an item with neutral signals for one scope.
func (g *generator) base(id, scope, text string, ageDays float64) genDoc {
	return genDoc{ID: id, Text: text, Scope: scope, CreatedAt: g.opts.Now.Add(-time.Duration(ageDays * 24 * float64(time.Hour))).Format(time.RFC3339),
		Importance: 0.5, Trust: 0.7, Sensitivity: 0.1, Novelty: 0.2, AccessCount: 3}
}

// noisy gives d random values for every signal: background items.
func (g *generator) noisy(d *genDoc) {
	d.CreatedAt = g.opts.Now.Add(-time.Duration(g.rng.Float64() * 200 * 24 * float64(time.Hour))).Format(time.RFC3339)
	d.Importance = round2(g.rng.Float64())
	d.Trust = round2(0.3 + 0.7*g.rng.Float64())
	d.Sensitivity = round2(0.7 * g.rng.Float64())
	d.Novelty = round2(g.rng.Float64())
	d.AccessCount = g.rng.IntN(30)
}

func round2(x float64) float64 { return float64(int(x*100+0.5)) / 100 }

// scope writes one query, its right answers, confusers and noise.
func (g *generator) scope(qid, cat string) {
	t1, t2, t3 := g.word(), g.word(), g.word()
	topic := t1 + " " + t2 + " " + t3
	g.qs = append(g.qs, genQuery{ID: qid, Text: "what do we know about the " + topic, Scope: qid, Category: cat})
	id := func(kind string, i int) string { return fmt.Sprintf("%s-%s%d", qid, kind, i) }
	judge := func(doc string, grade int) { g.qrels = append(g.qrels, genJudgment{qid, doc, grade}) }
	age := 5 + 60*g.rng.Float64() // the scope's common age
	// strong: matches the topic twice; weak: once; near: once, in a
	// shorter text than weak, so a little better.
	strong := func() string { return topic + " " + g.filler(4) + " " + topic + " " + g.word() }
	weak := func() string { return topic + " " + g.filler(6) + " " + g.word() }
	near := func() string { return topic + " " + g.filler(5) + " " + g.word() }

	switch cat {
	case CatRelevance:
		d := g.base(id("right", 0), qid, strong(), age)
		g.noisy(&d)
		g.docs = append(g.docs, d)
		judge(d.ID, 2)
		for i := range 3 {
			c := g.base(id("partial", i), qid, t1+" "+g.filler(8)+" "+g.word(), age)
			g.noisy(&c)
			g.docs = append(g.docs, c)
		}
	case CatRecency:
		for i, days := range []float64{180, 90, 1} {
			text := near()
			if i == 2 {
				text = weak()
			}
			d := g.base(id("version", i), qid, text+fmt.Sprintf(" version %d", i+1), days)
			g.docs = append(g.docs, d)
			if i == 2 {
				judge(d.ID, 2)
			}
		}
	case CatCausality:
		mid := g.base(id("mechanism", 0), qid, g.word()+" "+g.filler(6)+" "+g.word(), age)
		root := g.base(id("rootcause", 0), qid, t3+" "+g.filler(6)+" "+g.word(), age)
		mid.Links = []genLink{{Target: root.ID, Type: "caused_by"}}
		for i := range 3 {
			s := g.base(id("symptom", i), qid, strong(), age)
			s.Links = []genLink{{Target: mid.ID, Type: "caused_by"}}
			g.docs = append(g.docs, s)
			judge(s.ID, 1)
		}
		g.docs = append(g.docs, mid, root)
		judge(mid.ID, 1)
		judge(root.ID, 2)
		for i := range 4 {
			g.docs = append(g.docs, g.base(id("distractor", i), qid, t2+" "+t3+" "+g.filler(6)+" "+g.word(), age))
		}
	default:
		right := g.base(id("right", 0), qid, weak(), age)
		wrong := make([]genDoc, 3)
		for i := range wrong {
			wrong[i] = g.base(id("confuser", i), qid, near(), age)
		}
		set := func(d *genDoc, good bool) {
			switch cat {
			case CatTrust:
				d.Trust = pick(good, 0.9, 0.35)
			case CatFrequency:
				d.AccessCount = int(pick(good, 40, 1))
			case CatImportance:
				d.Importance = pick(good, 0.9, 0.2)
			case CatNovelty:
				d.Novelty = pick(good, 0.1, 0.9)
			case CatSensitivity:
				d.Sensitivity = pick(good, 0.05, 0.65)
			}
		}
		set(&right, true)
		g.docs = append(g.docs, right)
		judge(right.ID, 2)
		for i := range wrong {
			set(&wrong[i], false)
			g.docs = append(g.docs, wrong[i])
		}
	}
	for i := range g.opts.Noise {
		d := g.base(id("noise", i), qid, g.filler(8)+" "+g.word()+" "+g.word(), age)
		if g.rng.IntN(2) == 0 {
			d.Text += " " + []string{t1, t2, t3}[g.rng.IntN(3)]
		}
		g.noisy(&d)
		g.docs = append(g.docs, d)
	}
}

func pick(good bool, yes, no float64) float64 {
	if good {
		return yes
	}
	return no
}

func (g *generator) write(dir string, mapping Mapping) error {
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	writeLines := func(name string, n int, line func(i int) any) error {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		for i := range n {
			if err := enc.Encode(line(i)); err != nil {
				f.Close()
				return fmt.Errorf("gen: writing %s: %w", path, err)
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("gen: writing %s: %w", path, err)
		}
		return f.Close()
	}
	if err := writeLines("corpus.jsonl", len(g.docs), func(i int) any { return g.docs[i] }); err != nil {
		return err
	}
	if err := writeLines("queries.jsonl", len(g.qs), func(i int) any { return g.qs[i] }); err != nil {
		return err
	}
	var qrels strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for _, j := range g.qrels {
		fmt.Fprintf(&qrels, "%s\t%s\t%d\n", j.query, j.doc, j.grade)
	}
	if err := os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(qrels.String()), 0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	m, err := json.MarshalIndent(mapping, "", "  ")
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MappingFile), append(m, '\n'), 0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}
