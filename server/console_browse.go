package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/rag"
	"github.com/h4r/h4r/scs"
)

// The console's browsers list what H4R stores (items and memories, commit
// traces, stored packs, jobs) as the signed-in key may see it. Items are
// read from the store and shown only as the policy slicer cleared them
// for the key's specialist (scs.Cleared), as memory.read answers them: an
// item the key may not see is neither shown nor counted.

// ItemFinder lists stored items by filter (store/sqlite and
// store/postgres).
type ItemFinder interface {
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
}

// ItemClearer is the policy slicer (scs.Slicer): the items a specialist
// may see, redacted.
type ItemClearer interface {
	Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []scs.Cleared
}

// PackHistory lists the packs POST /query delivered and the verdicts on
// them (store/sqlite and store/postgres).
type PackHistory interface {
	PacksOf(ctx context.Context, principal string, limit, offset int) ([]h4r.StoredPack, int, error)
	FeedbackOn(ctx context.Context, packID string) ([]h4r.Feedback, error)
}

// JobHistory lists the jobs updated last (app.Jobs).
type JobHistory interface {
	Recent(ctx context.Context, limit int) ([]jobs.Job, error)
}

// Browse is what the console's browsers read. A nil field leaves its
// browser answering unavailable.
type Browse struct {
	Items  ItemFinder
	Slicer ItemClearer
	Packs  PackHistory
}

// WithBrowse serves the console's browsers over b. The job browser reads
// the jobs of WithJobs when they can list recent jobs (JobHistory).
func WithBrowse(b Browse) Option { return func(s *Server) { s.browse = b } }

const (
	// browsePage is the rows of one page of a browser.
	browsePage = 20
	// browseScan bounds the items one page view reads from the store and
	// asks the slicer about: beyond it the count says "at least".
	browseScan = 2000
	// jobScan bounds the recent jobs read, of which a key sees its own.
	jobScan = 500
)

func (s *Server) browseRoutes() []route {
	return []route{
		{"GET", "/ui/items", s.uiItems, consoleRoute},
		{"GET", "/ui/traces", s.uiTraces, consoleRoute},
		{"GET", "/ui/packs", s.uiPacks, consoleRoute},
		{"POST", "/ui/packs/feedback", s.uiFeedback, consoleRoute},
		{"GET", "/ui/jobs", s.uiJobs, consoleRoute},
		{"GET", "/ui/jobs/:id", s.uiJob, consoleRoute},
		{"GET", "/ui/bench", s.uiBench, consoleRoute},
		{"GET", "/ui/bench/:name", s.uiBenchFile, consoleRoute},
	}
}

// pager is one page of a list: its number (from 1), the rows shown, the
// total and the links to the neighbouring pages.
type pager struct {
	Page, Pages, Total, From, To int
	AtLeast                      bool // the scan stopped at browseScan: there may be more
	Prev, Next                   string
}

// page cuts n rows into pages and returns the bounds of the asked one
// (the query's "page"), with links that keep the other query values.
func paginate(q url.Values, path string, n int, atLeast bool) (pager, int, int) {
	p := pager{Total: n, AtLeast: atLeast, Pages: max(1, (n+browsePage-1)/browsePage)}
	p.Page, _ = strconv.Atoi(q.Get("page"))
	p.Page = min(max(p.Page, 1), p.Pages)
	lo := (p.Page - 1) * browsePage
	hi := min(lo+browsePage, n)
	p.From, p.To = lo+1, hi
	if n == 0 {
		p.From = 0
	}
	link := func(page int) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "page" && len(vs) > 0 && vs[0] != "" {
				v.Set(k, vs[0])
			}
		}
		v.Set("page", strconv.Itoa(page))
		return path + "?" + v.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return p, lo, hi
}

// browseSession is the start of a browser's page: the session, the
// route class the matching API route needs, and for a POST its form and
// CSRF token. A page of a limited class counts once against the key's
// rate limit for it, as the API's reads do (memory.read, POST /feedback);
// job pages do not, as polling GET /v1/jobs/{id} does not.
func (s *Server) browseSession(c *echo.Context, class auth.Route, what string) (*consoleSession, bool, error) {
	sess, ok, err := s.consoleAuth(c)
	if !ok || err != nil {
		return nil, false, err
	}
	if p := principal(c); p != nil && !p.Allows(class) {
		return sess, false, s.renderError(c, sess, h4r.Errorf(h4r.EFORBIDDEN, "", "%s needs a key with the %s class (this key's routes: %s)", what, class, joinRoutes(p.Routes)))
	}
	if err := parseForm(c); err != nil {
		return sess, false, s.renderError(c, sess, err)
	}
	if c.Request().Method == http.MethodPost {
		if err := s.checkWrite(c, sess); err != nil {
			return sess, false, s.renderError(c, sess, err)
		}
	}
	if class == auth.RouteRead {
		if err := s.consoleLimit(c, 1); err != nil {
			return sess, false, s.renderError(c, sess, err)
		}
	}
	return sess, true, nil
}

// clearedItems lists the items filters pass as spec may see them, newest
// first, and whether the scan stopped at its bound.
func (s *Server) clearedItems(ctx context.Context, spec h4r.Specialist, raw map[string]any) ([]scs.Cleared, bool, error) {
	if s.browse.Items == nil || s.browse.Slicer == nil {
		return nil, false, h4r.Errorf(h4r.EUNAVAILABLE, "", "this server was started without the console's item browser")
	}
	filters, err := h4r.ParseFilters("filter", raw)
	if err != nil {
		return nil, false, err
	}
	found, err := s.browse.Items.Find(ctx, h4r.ItemQuery{Filters: filters, Limit: browseScan})
	if err != nil {
		return nil, false, fmt.Errorf("listing items: %w", err)
	}
	return s.browse.Slicer.Clear(ctx, spec, found), len(found) == browseScan, nil
}

// itemFilterForm is the item browser's filter, from the query string.
type itemFilterForm struct {
	Kind, Tag, SessionID, AgentID, Repo string
}

// raw is the form as a request's filters object.
func (f itemFilterForm) raw() map[string]any {
	raw := map[string]any{}
	for k, v := range map[string]string{"kind": f.Kind, "session_id": f.SessionID, "agent_id": f.AgentID, "repo": f.Repo} {
		if v = strings.TrimSpace(v); v != "" {
			raw[k] = v
		}
	}
	if t := strings.TrimSpace(f.Tag); t != "" {
		raw["tags"] = []any{t}
	}
	return raw
}

// itemRow is one item as the browser shows it: the cleared copy's text,
// and of its metadata only what memory.read shows (tags, scope, time).
type itemRow struct {
	ID, Kind, Text, Source string
	Tags                   []string
	Scope                  []scopeField
	CreatedAt              time.Time
	RedactedFields         []string
}

type scopeField struct{ Key, Value string }

func itemRowOf(c scs.Cleared) itemRow {
	it := c.Item()
	r := itemRow{ID: it.ID, Kind: it.Kind, Text: it.Text, Source: it.Metadata.Source, Tags: it.Metadata.Tags,
		CreatedAt: it.Metadata.CreatedAt, RedactedFields: c.RedactedFields()}
	for _, k := range []string{"session_id", "agent_id", "repo", "memory_type"} {
		if v, ok := it.Metadata.Extra[k].(string); ok && v != "" {
			r.Scope = append(r.Scope, scopeField{k, v})
		}
	}
	return r
}

// uiItems lists items and memories, filtered by kind, tag and scope.
func (s *Server) uiItems(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteRead, "the item browser")
	if !ok || err != nil {
		return err
	}
	q := c.Request().URL.Query()
	f := itemFilterForm{Kind: q.Get("kind"), Tag: q.Get("tag"), SessionID: q.Get("session_id"), AgentID: q.Get("agent_id"), Repo: q.Get("repo")}
	title := "Items"
	if f.Kind == "memory" {
		title = "Memories"
	}
	d := s.pageData(c, sess, title)
	d["Filter"] = f
	spec, err := s.identity(c, "", nil)
	if err == nil {
		var cleared []scs.Cleared
		var atLeast bool
		if cleared, atLeast, err = s.clearedItems(c.Request().Context(), spec, f.raw()); err == nil {
			p, lo, hi := paginate(q, "/ui/items", len(cleared), atLeast)
			rows := make([]itemRow, 0, hi-lo)
			for _, cl := range cleared[lo:hi] {
				rows = append(rows, itemRowOf(cl))
			}
			d["Pager"], d["Rows"] = p, rows
		}
	}
	if err != nil {
		d["Error"] = toError(err)
		return s.render(c, HTTPStatus(toError(err).Code), "items", d)
	}
	return s.render(c, http.StatusOK, "items", d)
}

// traceRow is one commit trace as cleared: its content is the trace the
// API's GET /v1/trace answers, decisions and outcome included.
type traceRow struct {
	ID, Repo, SHA, Branch, Author, Summary, Status string
	LandedAt, MergedVia, RevertedBy                string
	Decisions                                      []decisionRow
	RedactedFields                                 []string
}

type decisionRow struct {
	Context, Chosen, Reasoning, Category, Risk string
}

func str(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func traceRowOf(c scs.Cleared) traceRow {
	it := c.Item()
	m := it.Content
	r := traceRow{ID: it.ID, Repo: str(m, "repo"), SHA: str(m, "sha"), Branch: str(m, "branch"), Author: str(m, "author"),
		Summary: str(m, "summary"), Status: str(m, "status"), LandedAt: str(m, "landed_at"), MergedVia: str(m, "merged_via"),
		RevertedBy: str(m, "reverted_by"), RedactedFields: c.RedactedFields()}
	if r.Summary == "" {
		r.Summary = it.Text
	}
	ds, _ := m["decisions"].([]any)
	for _, x := range ds {
		d, ok := x.(map[string]any)
		if !ok {
			continue
		}
		row := decisionRow{Context: str(d, "context"), Reasoning: str(d, "reasoning"), Category: str(d, "category"), Risk: str(d, "risk")}
		opts, _ := d["options"].([]any)
		if sel, ok := d["selected"].(float64); ok && int(sel) >= 0 && int(sel) < len(opts) {
			if o, ok := opts[int(sel)].(map[string]any); ok {
				row.Chosen = str(o, "description")
			}
		}
		r.Decisions = append(r.Decisions, row)
	}
	return r
}

// uiTraces lists commit traces with their decisions and outcomes.
func (s *Server) uiTraces(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteRead, "the trace browser")
	if !ok || err != nil {
		return err
	}
	q := c.Request().URL.Query()
	repo, status := strings.TrimSpace(q.Get("repo")), strings.TrimSpace(q.Get("status"))
	d := s.pageData(c, sess, "Commit traces")
	d["Repo"], d["Status"] = repo, status
	raw := map[string]any{"kind": "commit_trace"}
	if repo != "" {
		raw["repo"] = repo
	}
	if status != "" {
		raw["status"] = status
	}
	spec, err := s.identity(c, "", nil)
	if err == nil {
		var cleared []scs.Cleared
		var atLeast bool
		if cleared, atLeast, err = s.clearedItems(c.Request().Context(), spec, raw); err == nil {
			p, lo, hi := paginate(q, "/ui/traces", len(cleared), atLeast)
			rows := make([]traceRow, 0, hi-lo)
			for _, cl := range cleared[lo:hi] {
				rows = append(rows, traceRowOf(cl))
			}
			d["Pager"], d["Rows"] = p, rows
		}
	}
	if err != nil {
		d["Error"] = toError(err)
		return s.render(c, HTTPStatus(toError(err).Code), "traces", d)
	}
	return s.render(c, http.StatusOK, "traces", d)
}

// packRow is a stored pack of the key's principal: its results as the
// key may see them now (re-cleared: an item policy hides since is not
// shown or counted), and the verdicts given on it.
type packRow struct {
	ID, Query, PolicyRevision string
	CreatedAt                 time.Time
	Results                   []itemRow
	Feedback                  []h4r.Feedback
}

// uiPacks lists the packs POST /query delivered to the key's principal,
// the only packs it may give feedback on.
func (s *Server) uiPacks(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteRead, "the pack browser")
	if !ok || err != nil {
		return err
	}
	d := s.pageData(c, sess, "Stored packs")
	if c.QueryParam("given") != "" {
		d["Given"] = c.QueryParam("given")
	}
	if err := s.listPacks(c, d); err != nil {
		d["Error"] = toError(err)
		return s.render(c, HTTPStatus(toError(err).Code), "packs", d)
	}
	return s.render(c, http.StatusOK, "packs", d)
}

func (s *Server) listPacks(c *echo.Context, d map[string]any) error {
	if s.browse.Packs == nil || s.browse.Items == nil || s.browse.Slicer == nil {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "this server was started without a pack store: no packs are kept")
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	packs, total, err := s.browse.Packs.PacksOf(ctx, spec.ID, browsePage, (page-1)*browsePage)
	if err != nil {
		return err
	}
	p, _, _ := paginate(q, "/ui/packs", total, false)
	if p.Page != page { // past the last page: show the last
		if packs, total, err = s.browse.Packs.PacksOf(ctx, spec.ID, browsePage, (p.Page-1)*browsePage); err != nil {
			return err
		}
		p, _, _ = paginate(url.Values{"page": {strconv.Itoa(p.Page)}}, "/ui/packs", total, false)
	}
	rows := make([]packRow, 0, len(packs))
	for _, sp := range packs {
		row := packRow{ID: sp.ID, Query: sp.Query, PolicyRevision: sp.PolicyRevision, CreatedAt: sp.CreatedAt}
		items, err := s.itemsByID(ctx, sp.ResultIDs)
		if err != nil {
			return err
		}
		for _, cl := range s.browse.Slicer.Clear(ctx, spec, items) {
			row.Results = append(row.Results, itemRowOf(cl))
		}
		if row.Feedback, err = s.browse.Packs.FeedbackOn(ctx, sp.ID); err != nil {
			return err
		}
		rows = append(rows, row)
	}
	d["Pager"], d["Rows"], d["Verdicts"] = p, rows, []string{h4r.VerdictUseful, h4r.VerdictPartial, h4r.VerdictWrong}
	return nil
}

// itemsByID reads the stored items of ids, skipping those deleted since.
func (s *Server) itemsByID(ctx context.Context, ids []string) ([]*h4r.Item, error) {
	out := make([]*h4r.Item, 0, len(ids))
	for _, id := range ids {
		it, err := s.store.Get(ctx, id)
		if h4r.ErrorCode(err) == h4r.ENOTFOUND {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading item %s of a stored pack: %w", id, err)
		}
		out = append(out, it)
	}
	return out, nil
}

// uiFeedback gives a verdict on one of the key's packs, by POST /feedback's
// own call, and goes back to the list.
func (s *Server) uiFeedback(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteRead, "feedback")
	if !ok || err != nil {
		return err
	}
	f := c.Request().PostForm
	req := rag.FeedbackRequest{ContextPackID: strings.TrimSpace(f.Get("pack")), Verdict: f.Get("verdict"), Notes: f.Get("notes")}
	if err := s.giveFeedback(c, req); err != nil {
		d := s.pageData(c, sess, "Stored packs")
		d["Error"] = toError(err)
		// The error is the verdict's: the list is shown when it can be.
		if lerr := s.listPacks(c, d); lerr != nil {
			s.log.DebugContext(c.Request().Context(), "console: listing packs after a refused verdict", "error", lerr)
		}
		return s.render(c, HTTPStatus(toError(err).Code), "packs", d)
	}
	consoleHeaders(c)
	return c.Redirect(http.StatusSeeOther, "/ui/packs?given="+url.QueryEscape(req.ContextPackID)+"#pack-"+url.QueryEscape(req.ContextPackID))
}

func (s *Server) giveFeedback(c *echo.Context, req rag.FeedbackRequest) error {
	svc, err := s.ragService()
	if err != nil {
		return err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return err
	}
	return svc.Feedback(c.Request().Context(), spec, req)
}

// jobRow is a job with its progress as fractions the page draws.
type jobRow struct {
	jobs.Job
	Done, Total int
	Running     bool
}

func jobRowOf(j jobs.Job) jobRow {
	r := jobRow{Job: j, Running: j.State == jobs.StateQueued || j.State == jobs.StateRunning}
	switch p := j.Progress; {
	case p.FilesTotal > 0:
		r.Done, r.Total = p.FilesSeen, p.FilesTotal
	case p.ItemsTotal > 0:
		r.Done, r.Total = p.ItemsDone, p.ItemsTotal
	}
	return r
}

// visibleJobs are the recent jobs the key may see: its own, every job for
// an admin key, as GET /v1/jobs/{id} shows them.
func (s *Server) visibleJobs(c *echo.Context) ([]jobRow, error) {
	js, err := s.jobService()
	if err != nil {
		return nil, err
	}
	jh, ok := js.(JobHistory)
	if !ok {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "this server's jobs cannot be listed")
	}
	recent, err := jh.Recent(c.Request().Context(), jobScan)
	if err != nil {
		return nil, err
	}
	viewer, admin := jobViewer(c)
	var out []jobRow
	for _, j := range recent {
		if j.VisibleTo(viewer, admin) {
			out = append(out, jobRowOf(j))
		}
	}
	return out, nil
}

// uiJobs lists the key's ingestion and reindex jobs.
func (s *Server) uiJobs(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteIngest, "the job browser")
	if !ok || err != nil {
		return err
	}
	d := s.pageData(c, sess, "Jobs")
	rows, err := s.visibleJobs(c)
	if err != nil {
		d["Error"] = toError(err)
		return s.render(c, HTTPStatus(toError(err).Code), "jobs", d)
	}
	p, lo, hi := paginate(c.Request().URL.Query(), "/ui/jobs", len(rows), false)
	d["Pager"], d["Rows"] = p, rows[lo:hi]
	for _, r := range rows[lo:hi] {
		if r.Running {
			d["Live"] = true
		}
	}
	return s.render(c, http.StatusOK, "jobs", d)
}

// uiJob shows one job and its progress; the page's script reloads its
// progress while the job runs.
func (s *Server) uiJob(c *echo.Context) error {
	sess, ok, err := s.browseSession(c, auth.RouteIngest, "the job browser")
	if !ok || err != nil {
		return err
	}
	d := s.pageData(c, sess, "Job")
	id := c.Param("id")
	err = func() error {
		js, err := s.jobService()
		if err != nil {
			return err
		}
		j, err := js.Get(c.Request().Context(), id)
		if err != nil {
			return err
		}
		if viewer, admin := jobViewer(c); !j.VisibleTo(viewer, admin) {
			return h4r.Errorf(h4r.ENOTFOUND, "id", "no job with id %q", id)
		}
		row := jobRowOf(j)
		d["Job"], d["Live"] = row, row.Running
		return nil
	}()
	if err != nil {
		d["Error"] = toError(err)
		return s.render(c, HTTPStatus(toError(err).Code), "job", d)
	}
	return s.render(c, http.StatusOK, "job", d)
}
