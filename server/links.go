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
	Links []wireLink `json:"links"`
}

// wireLink is a link as the link routes take it, in either vocabulary:
// the item's (type, target, targetType) or the decision traces' (linkType,
// entityId, entityType, as GET /v1/decision-traces/{id} answers). One
// link uses one vocabulary; strength and context are common.
type wireLink struct {
	Type       string  `json:"type,omitempty"`
	Target     string  `json:"target,omitempty"`
	TargetType string  `json:"targetType,omitempty"`
	LinkType   string  `json:"linkType,omitempty"`
	EntityID   string  `json:"entityId,omitempty"`
	EntityType string  `json:"entityType,omitempty"`
	Strength   float64 `json:"strength,omitempty"`
	Context    string  `json:"context,omitempty"`
}

// entityVocab reports whether l is written with the decision traces'
// names; it refuses a link that mixes the two vocabularies.
func (l wireLink) entityVocab(field string) (bool, error) {
	item := l.Type != "" || l.Target != "" || l.TargetType != ""
	entity := l.LinkType != "" || l.EntityID != "" || l.EntityType != ""
	if item && entity {
		return false, h4r.Errorf(h4r.EINVALID, field, "a link is {type, target, targetType} or {linkType, entityId, entityType}, not a mix of both")
	}
	return entity, nil
}

func (l wireLink) link() h4r.Link {
	if l.LinkType != "" || l.EntityID != "" || l.EntityType != "" {
		return h4r.Link{Type: l.LinkType, Target: l.EntityID, TargetType: l.EntityType, Strength: l.Strength, Context: l.Context}
	}
	return h4r.Link{Type: l.Type, Target: l.Target, TargetType: l.TargetType, Strength: l.Strength, Context: l.Context}
}

// linksResponse answers both: the item's links after the change, in the
// vocabulary the request wrote them in.
type linksResponse struct {
	ID    string `json:"id"`
	Links any    `json:"links"`
}

// entityLinks writes links with the decision traces' names.
func entityLinks(links []h4r.Link) []wireLink {
	out := make([]wireLink, 0, len(links))
	for _, l := range links {
		out = append(out, wireLink{LinkType: l.Type, EntityID: l.Target, EntityType: l.TargetType, Strength: l.Strength, Context: l.Context})
	}
	return out
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

// decodeLinks reads the item id and the links of a link edit, and
// whether they were written with the decision traces' names (the answer
// then uses them too).
func (s *Server) decodeLinks(c *echo.Context) (string, []h4r.Link, bool, error) {
	id, err := itemID(c)
	if err != nil {
		return "", nil, false, err
	}
	body, err := s.readBody(c)
	if err != nil {
		return "", nil, false, err
	}
	var b linksBody
	if err := jsonstrict.Decode(body, &b, ""); err != nil {
		return "", nil, false, err
	}
	if len(b.Links) == 0 {
		return "", nil, false, h4r.Errorf(h4r.EINVALID, "links", "links is required: a list of {type, target, targetType, strength, context} or {linkType, entityId, entityType, strength, context}")
	}
	links := make([]h4r.Link, len(b.Links))
	entity := false
	for i, wl := range b.Links {
		e, err := wl.entityVocab(fmt.Sprintf("links[%d]", i))
		if err != nil {
			return "", nil, false, err
		}
		if i > 0 && e != entity {
			return "", nil, false, h4r.Errorf(h4r.EINVALID, fmt.Sprintf("links[%d]", i), "the links of one request use one vocabulary")
		}
		entity = e
		links[i] = wl.link()
	}
	return id, links, entity, nil
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
	id, links, entity, err := s.decodeLinks(c)
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
	return s.writeLinks(c, d, spec, it, entity)
}

// removeLinks removes the item's links that match each given link by
// type and target (and targetType when given). A given link that matches
// none is not_found, and nothing is removed.
func (s *Server) removeLinks(c *echo.Context) error {
	id, links, entity, err := s.decodeLinks(c)
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
	return s.writeLinks(c, d, spec, it, entity)
}

// writeLinks stores the edited item and answers with its links as the
// caller may see them: read from the item as the slicer clears it (a
// redacted item's link contexts are redacted), less those to items the
// caller may not see.
func (s *Server) writeLinks(c *echo.Context, d DecisionService, spec h4r.Specialist, it *h4r.Item, entity bool) error {
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
	if entity {
		return c.JSON(http.StatusOK, linksResponse{ID: it.ID, Links: entityLinks(links)})
	}
	if links == nil {
		links = []h4r.Link{}
	}
	return c.JSON(http.StatusOK, linksResponse{ID: it.ID, Links: links})
}
