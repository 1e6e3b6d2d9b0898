package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/h4r/h4r/sources"
)

// Doc is one document of a BEIR corpus; Extra keeps the fields beyond _id,
// title and text (cisi's author and xrefs, cranfield's bib).
type Doc struct {
	ID    string
	Title string
	Text  string
	Extra map[string]json.RawMessage
}

// Query is one BEIR query.
type Query struct {
	ID   string
	Text string
}

// Dataset is a labelled retrieval collection in BEIR layout:
// corpus.jsonl, queries.jsonl and qrels/<split>.tsv.
type Dataset struct {
	Name    string
	Docs    []Doc
	Queries []Query              // only the queries the split judges, in file order
	Qrels   map[string]Judgments // query id → judged documents
}

// LoadBEIR reads the dataset in dir with the judgments of split ("test",
// "train"). Errors name the file and line.
func LoadBEIR(dir, split string) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(dir), Qrels: map[string]Judgments{}}
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
	return ds, nil
}

// Items maps the documents onto the item model: the text search indexes is
// the title and the text, as BEIR evaluations index them. A document with
// neither (cranfield has one) can never be retrieved and is left out.
func (ds *Dataset) Items() []sources.Item {
	items := make([]sources.Item, 0, len(ds.Docs))
	for _, d := range ds.Docs {
		text := strings.TrimSpace(d.Title + "\n" + d.Text)
		if text == "" {
			continue
		}
		items = append(items, sources.Item{ID: d.ID, Kind: "document", Text: text})
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

// readQrels reads a qrels TSV (query-id, corpus-id, score, with a header).
func readQrels(path string, into map[string]Judgments) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(strings.TrimSpace(sc.Text()), "\t")
		if line == 1 && len(fields) > 0 && fields[0] == "query-id" {
			continue
		}
		if len(fields) == 1 && fields[0] == "" {
			continue
		}
		if len(fields) != 3 {
			return fmt.Errorf("%s:%d: want query-id, corpus-id and score separated by tabs", path, line)
		}
		grade, err := strconv.Atoi(fields[2])
		if err != nil {
			return fmt.Errorf("%s:%d: score %q is not a whole number", path, line, fields[2])
		}
		if into[fields[0]] == nil {
			into[fields[0]] = Judgments{}
		}
		into[fields[0]][fields[1]] = grade
	}
	return sc.Err()
}
