package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/conversation"
)

// Doc is one document of a BEIR corpus. The fields the dataset's Mapping
// names are decoded into the typed fields; Extra keeps the rest (cisi's
// author, cranfield's bib).
type Doc struct {
	ID    string
	Title string
	Text  string

	CreatedAt                               time.Time // zero: undated
	Links                                   []Link
	Importance, Trust, Sensitivity, Novelty *float64 // nil: the item model's default
	AccessCount                             int64
	Scope                                   string
	Session                                 string // the conversation session, "" for none
	Turn                                    int    // order within the session, when HasTurn
	HasTurn                                 bool

	Extra map[string]json.RawMessage
}

// Link is a link of a document to another, as the mapping read it.
type Link struct {
	Target string
	Type   string
}

// Query is one BEIR query, with its scope and category when the mapping
// names them.
type Query struct {
	ID       string
	Text     string
	Scope    string
	Category string
	AsOf     time.Time // when the question is asked; zero: not given
}

// Dataset is a labelled retrieval collection in BEIR layout:
// corpus.jsonl, queries.jsonl and qrels/<split>.tsv.
type Dataset struct {
	Name    string
	Mapping Mapping
	Now     time.Time // the clock of runs: Mapping.Now, else the latest createdAt, else DefaultNow
	Docs    []Doc
	Queries []Query              // only the queries the split judges, in file order
	Qrels   map[string]Judgments // query id → judged documents
}

// LoadOption configures LoadBEIR.
type LoadOption func(*loadOptions)

type loadOptions struct {
	mapping *Mapping
}

// WithMapping uses m instead of the folder's h4r-mapping.json (or
// DefaultMapping when it has none).
func WithMapping(m Mapping) LoadOption { return func(o *loadOptions) { o.mapping = &m } }

// LoadBEIR reads the dataset in dir with the judgments of split ("test",
// "train"), mapping extra fields as dir/h4r-mapping.json says. Errors name
// the file, the line and the field.
func LoadBEIR(dir, split string, opts ...LoadOption) (*Dataset, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	ds := &Dataset{Name: filepath.Base(dir), Qrels: map[string]Judgments{}}
	if o.mapping != nil {
		ds.Mapping = *o.mapping
	} else {
		m, err := readMapping(dir)
		if err != nil {
			return nil, err
		}
		ds.Mapping = m
	}
	if err := readQrels(filepath.Join(dir, "qrels", split+".tsv"), ds.Qrels); err != nil {
		return nil, err
	}
	err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(raw map[string]json.RawMessage) error {
		var d Doc
		if err := unmarshalField(raw, "_id", &d.ID, true); err != nil {
			return err
		}
		if err := unmarshalField(raw, "title", &d.Title, false); err != nil {
			return err
		}
		if err := unmarshalField(raw, "text", &d.Text, true); err != nil {
			return err
		}
		delete(raw, "_id")
		delete(raw, "title")
		delete(raw, "text")
		if err := ds.Mapping.applyMapping(raw, &d); err != nil {
			return err
		}
		if len(raw) > 0 {
			d.Extra = raw
		}
		ds.Docs = append(ds.Docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(raw map[string]json.RawMessage) error {
		var q Query
		if err := unmarshalField(raw, "_id", &q.ID, true); err != nil {
			return err
		}
		if err := unmarshalField(raw, "text", &q.Text, true); err != nil {
			return err
		}
		if v, ok := raw[ds.Mapping.QueryDate]; ok && ds.Mapping.QueryDate != "" && string(v) != "null" {
			t, err := parseTime(v)
			if err != nil {
				return fmt.Errorf("%q: %w", ds.Mapping.QueryDate, err)
			}
			q.AsOf = t
		}
		for _, f := range []struct {
			name string
			dst  *string
		}{{ds.Mapping.Scope, &q.Scope}, {ds.Mapping.Category, &q.Category}} {
			if v, ok := raw[f.name]; ok && f.name != "" {
				s, err := parseScalarString(v)
				if err != nil {
					return fmt.Errorf("%q: %w", f.name, err)
				}
				*f.dst = s
			}
		}
		if _, judged := ds.Qrels[q.ID]; judged {
			ds.Queries = append(ds.Queries, q)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ds.Queries) == 0 {
		return nil, fmt.Errorf("%s: no query of queries.jsonl is judged in qrels/%s.tsv", dir, split)
	}
	if ds.Mapping.Turn != "" {
		linkTurns(ds.Docs, ds.Mapping.LinkType)
	}
	if ds.Mapping.Category == "" && ds.Mapping.Session != "" {
		ds.sessionCategories()
	}
	ds.Now = DefaultNow()
	if ds.Mapping.Now != "" {
		ds.Now, _ = time.Parse(time.RFC3339, ds.Mapping.Now) // checked by ParseMapping
	} else {
		var latest time.Time
		for _, d := range ds.Docs {
			if d.CreatedAt.After(latest) {
				latest = d.CreatedAt
			}
		}
		if !latest.IsZero() {
			ds.Now = latest
		}
	}
	return ds, nil
}

// Items maps the documents onto the item model: the text search indexes is
// the title and the text, as BEIR evaluations index them; mapped fields
// become metadata and links. A document with neither title nor text
// (cranfield has one) can never be retrieved and is left out. Access counts
// are not part of an item (the store maintains them): see OpenLoaded.
func (ds *Dataset) Items() []h4r.Item {
	items := make([]h4r.Item, 0, len(ds.Docs))
	for _, d := range ds.Docs {
		text := strings.TrimSpace(d.Title + "\n" + d.Text)
		if text == "" {
			continue
		}
		it := h4r.Item{ID: d.ID, Kind: "document", Text: text}
		m := &it.Metadata
		m.CreatedAt = d.CreatedAt
		m.Importance, m.Trust, m.Sensitivity, m.Novelty = d.Importance, d.Trust, d.Sensitivity, d.Novelty
		if d.Scope != "" || d.Session != "" {
			m.Extra = map[string]any{}
		}
		if d.Scope != "" {
			m.Extra[ScopeKey] = d.Scope
		}
		if d.Session != "" {
			m.Extra[conversation.SessionKey] = d.Session
		}
		for _, l := range d.Links {
			it.Links = append(it.Links, h4r.Link{Type: l.Type, Target: l.Target, Strength: 1})
			if len(it.Links) == h4r.MaxLinks {
				break // the item model's limit; a longer list is cut, not refused
			}
		}
		items = append(items, it)
	}
	return items
}

func unmarshalField(raw map[string]json.RawMessage, key string, dst *string, required bool) error {
	v, ok := raw[key]
	if !ok {
		if required {
			return fmt.Errorf("missing %q", key)
		}
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("%q: want a string: %w", key, err)
	}
	return nil
}

// readJSONL calls fn for every non-empty line of path, decoded as an object.
func readJSONL(path string, fn func(map[string]json.RawMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(b))) > 0 {
			var raw map[string]json.RawMessage
			if jerr := json.Unmarshal(b, &raw); jerr != nil {
				return fmt.Errorf("%s:%d: %w", path, line, jerr)
			}
			if ferr := fn(raw); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, line, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// readQrels reads a qrels TSV file (query-id, corpus-id, score, with a
// header).
func readQrels(path string, into map[string]Judgments) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return parseQrels(f, path, into)
}

// parseQrels reads qrels lines from r; name prefixes errors ("FILE:LINE:").
// A repeated (query, document) pair keeps its last grade.
func parseQrels(r io.Reader, name string, into map[string]Judgments) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), "\t")
		if line == 1 && len(fields) > 0 && fields[0] == "query-id" {
			continue
		}
		if len(fields) == 1 && fields[0] == "" {
			continue
		}
		if len(fields) != 3 {
			return fmt.Errorf("%s:%d: want query-id, corpus-id and score separated by tabs", name, line)
		}
		if fields[0] == "" || fields[1] == "" {
			return fmt.Errorf("%s:%d: empty query-id or corpus-id", name, line)
		}
		grade, err := strconv.Atoi(fields[2])
		if err != nil {
			return fmt.Errorf("%s:%d: score %q is not a whole number", name, line, fields[2])
		}
		if grade < 0 || grade > 10 {
			return fmt.Errorf("%s:%d: score %d is out of range (want 0 to 10: the gain is 2^score - 1)", name, line, grade)
		}
		if into[fields[0]] == nil {
			into[fields[0]] = Judgments{}
		}
		into[fields[0]][fields[1]] = grade
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// Question categories of datasets with sessions and no category field.
const (
	SessionSingle = "single-session" // every evidence turn is in one session
	SessionMulti  = "multi-session"  // the evidence spans sessions
)

// linkTurns gives each turn a link of type linkType to the turn before it
// in its session (and scope), by turn order, unless it links there
// already. Turns without a session or a turn number are left alone.
func linkTurns(docs []Doc, linkType string) {
	type key struct{ scope, session string }
	bySession := map[key][]int{}
	for i, d := range docs {
		if d.Session != "" && d.HasTurn {
			k := key{d.Scope, d.Session}
			bySession[k] = append(bySession[k], i)
		}
	}
	for _, idx := range bySession {
		slices.SortStableFunc(idx, func(a, b int) int { return docs[a].Turn - docs[b].Turn })
		for j := 1; j < len(idx); j++ {
			d, prev := &docs[idx[j]], docs[idx[j-1]]
			l := Link{Target: prev.ID, Type: linkType}
			if !slices.Contains(d.Links, l) {
				d.Links = append(d.Links, l)
			}
		}
	}
}

// sessionCategories sets each query's category by where its evidence is:
// in one session or in several.
func (ds *Dataset) sessionCategories() {
	session := make(map[string]string, len(ds.Docs))
	for _, d := range ds.Docs {
		session[d.ID] = d.Session
	}
	for i, q := range ds.Queries {
		seen := map[string]bool{}
		for id, g := range ds.Qrels[q.ID] {
			if g > 0 {
				seen[session[id]] = true
			}
		}
		ds.Queries[i].Category = SessionSingle
		if len(seen) > 1 {
			ds.Queries[i].Category = SessionMulti
		}
	}
}
