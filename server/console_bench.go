package server

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
)

// The benchmark pages show the newest quality, tuning and latency reports
// of bench/results. The binary serves a copy embedded under
// console/bench/DATE/ (ConsoleBenchSet says which files; a test checks
// the copy is current): a server has no repository to read them from.

// consoleBenchKinds are the report kinds shown, by file-name prefix, in
// the order the page lists them.
var consoleBenchKinds = []string{"quality", "tune", "latency"}

// ConsoleBenchSet returns the files the benchmark pages embed, as paths
// "DATE/NAME" under results (the bench/results folder): for each kind,
// the Markdown and SVG files named after it in the newest dated folder
// that holds a Markdown report of that kind.
func ConsoleBenchSet(results fs.FS) ([]string, error) {
	dates, err := fs.ReadDir(results, ".")
	if err != nil {
		return nil, fmt.Errorf("reading the benchmark results: %w", err)
	}
	var out []string
	for _, kind := range consoleBenchKinds {
		for i := len(dates) - 1; i >= 0; i-- {
			if !dates[i].IsDir() {
				continue
			}
			files, err := fs.ReadDir(results, dates[i].Name())
			if err != nil {
				return nil, fmt.Errorf("reading the benchmark results of %s: %w", dates[i].Name(), err)
			}
			var found []string
			hasMD := false
			for _, f := range files {
				n := f.Name()
				if f.IsDir() || !strings.HasPrefix(n, kind) || (!strings.HasSuffix(n, ".md") && !strings.HasSuffix(n, ".svg")) {
					continue
				}
				hasMD = hasMD || strings.HasSuffix(n, ".md")
				found = append(found, dates[i].Name()+"/"+n)
			}
			if hasMD {
				out = append(out, found...)
				break
			}
		}
	}
	return out, nil
}

// benchReport is one report on the index page.
type benchReport struct {
	Kind, Date, Name, Title string
	SVG                     string // its chart, "" when it has none
}

// benchFiles lists the embedded reports and, apart, every chart (a chart
// may have no report of its own name, as the tuning's do not).
func benchFiles() (reports, charts []benchReport, err error) {
	err = fs.WalkDir(consoleFiles, "console/bench", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, "console/bench/")
		date, name, _ := strings.Cut(rel, "/")
		r := benchReport{Date: date, Name: rel, Title: name}
		for _, k := range consoleBenchKinds {
			if strings.HasPrefix(name, k) {
				r.Kind = k
				break
			}
		}
		if strings.HasSuffix(p, ".svg") {
			r.SVG = rel
			charts = append(charts, r)
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		if b, err := consoleFiles.ReadFile(p); err == nil {
			if first, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(first, "# ") {
				r.Title = strings.TrimPrefix(first, "# ")
			}
		}
		svg := strings.TrimSuffix(rel, ".md") + ".svg"
		if _, err := fs.Stat(consoleFiles, "console/bench/"+svg); err == nil {
			r.SVG = svg
		}
		reports = append(reports, r)
		return nil
	})
	return reports, charts, err
}

// mdBlock is one block of a Markdown report as the page draws it: text
// stays text (the template escapes it), tables become tables.
type mdBlock struct {
	Kind  string // "h", "p", "li", "pre", "table"
	Level int    // of a heading
	Text  string
	Rows  [][]string // a table's; the first is its head
}

// markdownBlocks splits a report into headings, paragraphs, list items,
// code blocks and tables. Inline markup is shown as written.
func markdownBlocks(src string) []mdBlock {
	var out []mdBlock
	var para, code []string
	inCode := false
	flush := func() {
		if len(para) > 0 {
			out = append(out, mdBlock{Kind: "p", Text: strings.Join(para, " ")})
			para = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "```"):
			if inCode {
				out = append(out, mdBlock{Kind: "pre", Text: strings.Join(code, "\n")})
				code = nil
			} else {
				flush()
			}
			inCode = !inCode
		case inCode:
			code = append(code, line)
		case trim == "":
			flush()
		case strings.HasPrefix(trim, "#"):
			flush()
			level := len(trim) - len(strings.TrimLeft(trim, "#"))
			out = append(out, mdBlock{Kind: "h", Level: min(level+1, 6), Text: strings.TrimSpace(trim[level:])})
		case strings.HasPrefix(trim, "|"):
			flush()
			cells := strings.Split(strings.Trim(trim, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if strings.Trim(strings.Join(cells, ""), ":- ") == "" {
				continue // the separator row
			}
			if n := len(out); n > 0 && out[n-1].Kind == "table" {
				out[n-1].Rows = append(out[n-1].Rows, cells)
			} else {
				out = append(out, mdBlock{Kind: "table", Rows: [][]string{cells}})
			}
		case strings.HasPrefix(trim, "- ") || strings.HasPrefix(trim, "* "):
			flush()
			out = append(out, mdBlock{Kind: "li", Text: trim[2:]})
		case strings.HasPrefix(line, "  ") && len(out) > 0 && out[len(out)-1].Kind == "li" && len(para) == 0:
			out[len(out)-1].Text += " " + trim
		default:
			para = append(para, trim)
		}
	}
	if inCode {
		out = append(out, mdBlock{Kind: "pre", Text: strings.Join(code, "\n")})
	}
	flush()
	return out
}

// uiBench lists the embedded reports; ?report=DATE/NAME.md shows one.
func (s *Server) uiBench(c *echo.Context) error {
	sess, ok, err := s.consoleAuth(c)
	if !ok || err != nil {
		return err
	}
	d := s.pageData(c, sess, "Benchmarks")
	reports, charts, err := benchFiles()
	if err != nil {
		return s.renderError(c, sess, fmt.Errorf("listing the embedded benchmark reports: %w", err))
	}
	d["Reports"], d["Charts"] = reports, charts
	if name := c.QueryParam("report"); name != "" {
		i := slices.IndexFunc(reports, func(r benchReport) bool { return r.Name == name })
		if i < 0 {
			return s.renderError(c, sess, h4r.Errorf(h4r.ENOTFOUND, "report", "no benchmark report %q", name))
		}
		b, err := consoleFiles.ReadFile("console/bench/" + name)
		if err != nil {
			return s.renderError(c, sess, fmt.Errorf("reading the report %s: %w", name, err))
		}
		d["Report"], d["Blocks"] = reports[i], markdownBlocks(string(b))
		d["Title"] = reports[i].Title
	}
	return s.render(c, http.StatusOK, "bench", d)
}

// benchSVGCSP is the policy of a chart: drawn, never scripted, even when
// opened on its own.
const benchSVGCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// uiBenchFile serves an embedded chart, named DATE~NAME.svg: the route's
// one path segment cannot hold the slash of DATE/NAME.svg.
func (s *Server) uiBenchFile(c *echo.Context) error {
	if _, ok, err := s.consoleAuth(c); !ok || err != nil {
		return err
	}
	name := strings.Replace(c.Param("name"), "~", "/", 1)
	if !strings.HasSuffix(name, ".svg") || strings.Contains(name, "..") || path.Clean(name) != name {
		return h4r.Errorf(h4r.ENOTFOUND, "", "no such chart")
	}
	b, err := consoleFiles.ReadFile("console/bench/" + name)
	if err != nil {
		return h4r.Errorf(h4r.ENOTFOUND, "", "no such chart")
	}
	consoleHeaders(c)
	h := c.Response().Header()
	h.Set("Content-Security-Policy", benchSVGCSP)
	h.Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "image/svg+xml", b)
}
