package server

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// linksBody is the body of POST and DELETE /v1/items/{id}/links.
type linksBody struct {
	Links []h4r.Link `json:"links"`
}

// linksResponse answers both: the item's links after the change.
type linksResponse struct {
	ID    string     `json:"id"`
	Links []h4r.Link `json:"links"`
}

// keyedLocks serialises the link edits of one item in this process: an
// edit reads the item and writes it back, and two edits at once would
// otherwise lose one. (Edits on two replicas at once can still race: the
// last write wins.)
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// decodeLinks reads the item id and the links of a link edit.
func (s *Server) decodeLinks(c *echo.Context) (string, []h4r.Link, error) {
	id, err := itemID(c)
	if err != nil {
		return "", nil, err
	}
	body, err := s.readBody(c)
	if err != nil {
		return "", nil, err
	}
	var b linksBody
	if err := jsonstrict.Decode(body, &b, ""); err != nil {
		return "", nil, err
	}
	if len(b.Links) == 0 {
		return "", nil, h4r.Errorf(h4r.EINVALID, "links", "links is required: a list of {type, target, targetType, strength, context}")
	}
	return id, b.Links, nil
}

// visibleItem checks that the caller may see item id before it edits the
// item's links: one it may not see is not_found, as one that does not
// exist. It returns the decision service and the caller.
func (s *Server) visibleItem(c *echo.Context, id string) (DecisionService, h4r.Specialist, error) {
	d, err := s.decisionService()
	if err != nil {
		return nil, h4r.Specialist{}, err
	}
	spec, err := s.identity(c, "", nil)
	if err != nil {
		return nil, h4r.Specialist{}, err
	}
	if _, err := d.Visible(c.Request().Context(), spec, id); err != nil {
		return nil, h4r.Specialist{}, err
	}
	return d, spec, nil
}

// addLinks appends links to an item without re-sending it. A link to a
// decision (targetType decision) must name one that exists.
func (s *Server) addLinks(c *echo.Context) error {
	id, links, err := s.decodeLinks(c)
	if err != nil {
		return err
	}
	d, spec, err := s.visibleItem(c, id)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	for i, l := range links {
		field := fmt.Sprintf("links[%d]", i)
		if err := h4r.ValidateLink(l, field); err != nil {
			return err
		}
		if l.TargetType == h4r.TargetDecision {
			if _, err := s.store.Get(ctx, l.Target); h4r.ErrorCode(err) == h4r.ENOTFOUND {
				return h4r.Errorf(h4r.EINVALID, field+".target", "no decision with id %q: record it first", l.Target)
			} else if err != nil {
				return err
			}
		}
	}
	unlock := s.linkLocks.lock(id)
	defer unlock()
	it, err := s.store.Get(ctx, id)
	if err != nil {
		return err
	}
	if n := len(it.Links) + len(links); n > h4r.MaxLinks {
		return h4r.Errorf(h4r.EINVALID, "links", "the item would hold %d links, the limit is %d", n, h4r.MaxLinks)
	}
	it.Links = append(it.Links, links...)
	return s.writeLinks(c, d, spec, it)
}

// removeLinks removes the item's links that match each given link by
// type and target (and targetType when given). A given link that matches
// none is not_found, and nothing is removed.
func (s *Server) removeLinks(c *echo.Context) error {
	id, links, err := s.decodeLinks(c)
	if err != nil {
		return err
	}
	d, spec, err := s.visibleItem(c, id)
	if err != nil {
		return err
	}
	unlock := s.linkLocks.lock(id)
	defer unlock()
	it, err := s.store.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	matches := func(have, give h4r.Link) bool {
		return have.Type == give.Type && have.Target == give.Target && (give.TargetType == "" || have.TargetType == give.TargetType)
	}
	for i, give := range links {
		if !slices.ContainsFunc(it.Links, func(have h4r.Link) bool { return matches(have, give) }) {
			return h4r.Errorf(h4r.ENOTFOUND, fmt.Sprintf("links[%d]", i), "item %q holds no %s link to %q", id, give.Type, give.Target)
		}
	}
	it.Links = slices.DeleteFunc(it.Links, func(have h4r.Link) bool {
		return slices.ContainsFunc(links, func(give h4r.Link) bool { return matches(have, give) })
	})
	return s.writeLinks(c, d, spec, it)
}

// writeLinks stores the edited item and answers with its links as the
// caller may see them: read from the item as the slicer clears it (a
// redacted item's link contexts are redacted), less those to items the
// caller may not see.
func (s *Server) writeLinks(c *echo.Context, d DecisionService, spec h4r.Specialist, it *h4r.Item) error {
	if err := it.Validate(""); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.Upsert(ctx, []h4r.Item{*it}); err != nil {
		return unbatched(err)
	}
	cleared, err := d.Visible(ctx, spec, it.ID)
	if err != nil {
		return err
	}
	links := d.VisibleLinks(ctx, spec, cleared.Item().Links)
	if links == nil {
		links = []h4r.Link{}
	}
	return c.JSON(http.StatusOK, linksResponse{ID: it.ID, Links: links})
}
