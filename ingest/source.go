package ingest

import (
	"fmt"
	"math"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/jobs"
)

// Source types.
const (
	TypeGit = "git"
	TypeFS  = "fs"
	TypeURL = "url"
	TypeDoc = "doc"
)

// Source is one thing to ingest, as POST /ingest names it.
type Source struct {
	Type string `json:"type"`
	URI  string `json:"uri,omitempty"`
	Path string `json:"path,omitempty"`
	// Ref selects a commit of a git source (a branch, tag or sha; "HEAD"
	// for the last commit). Without it the working tree is read, as it is
	// on disk, .gitignore respected.
	Ref  string `json:"ref,omitempty"`
	Auth *Auth  `json:"auth,omitempty"`
	// Metadata is the default metadata of the source's items.
	Metadata *Defaults `json:"metadata,omitempty"`
}

// Auth is a source's credentials. Only a bearer token for url sources is
// used; it is never stored in a job's record.
type Auth struct {
	Token string `json:"token,omitempty"`
}

// Defaults is metadata every item of a source gets.
type Defaults struct {
	Sensitivity        *float64 `json:"sensitivity,omitempty"`
	Trust              *float64 `json:"trust,omitempty"`
	RestrictedToGroups []string `json:"restrictedToGroups,omitempty"`
}

// Options steer a run.
type Options struct {
	// Rechunk re-chunks and rewrites files whose sha is unchanged.
	Rechunk bool `json:"rechunk,omitempty"`
	// Reembed rewrites unchanged files too, so that the store embeds them
	// again (with the embedder configured now).
	Reembed bool `json:"reembed,omitempty"`
	// Schedule re-runs the ingest every interval after each run ends: a
	// Go duration from one minute to 366 days ("24h", "90m"). An unchanged
	// re-run writes nothing; the job shows its schedule.
	Schedule string `json:"schedule,omitempty"`
}

// Validate checks a source; field prefixes error fields ("sources[2]").
func (s Source) Validate(field string) error {
	at := func(n string) string { return field + "." + n }
	switch s.Type {
	case TypeGit, TypeFS, TypeDoc:
		if strings.TrimSpace(s.Path) == "" && strings.TrimSpace(s.URI) == "" {
			return h4r.Errorf(h4r.EINVALID, at("path"), "a %s source needs a path", s.Type)
		}
		if s.URI != "" && s.Path != "" {
			return h4r.Errorf(h4r.EINVALID, at("uri"), "give uri or path, not both")
		}
		if s.Type != TypeGit && s.Ref != "" {
			return h4r.Errorf(h4r.EINVALID, at("ref"), "ref applies to git sources only")
		}
	case TypeURL:
		if strings.TrimSpace(s.URI) == "" {
			return h4r.Errorf(h4r.EINVALID, at("uri"), "a url source needs a uri")
		}
		if s.Ref != "" {
			return h4r.Errorf(h4r.EINVALID, at("ref"), "ref applies to git sources only")
		}
	case "":
		return h4r.Errorf(h4r.EINVALID, at("type"), "type is required (git, fs, url or doc)")
	default:
		return h4r.Errorf(h4r.EINVALID, at("type"), "unknown source type %q (want git, fs, url or doc)", s.Type)
	}
	if d := s.Metadata; d != nil {
		for _, v := range []struct {
			name string
			p    *float64
		}{{"sensitivity", d.Sensitivity}, {"trust", d.Trust}} {
			if v.p != nil && (math.IsNaN(*v.p) || *v.p < 0 || *v.p > 1) {
				return h4r.Errorf(h4r.EINVALID, at("metadata."+v.name), "%s must be in [0, 1], got %v", v.name, *v.p)
			}
		}
		if len(d.RestrictedToGroups) > h4r.MaxGroups {
			return h4r.Errorf(h4r.EINVALID, at("metadata.restrictedToGroups"), "at most %d groups", h4r.MaxGroups)
		}
		for i, g := range d.RestrictedToGroups {
			if strings.TrimSpace(g) == "" {
				return h4r.Errorf(h4r.EINVALID, fmt.Sprintf("%s[%d]", at("metadata.restrictedToGroups"), i), "a group name is required")
			}
		}
	}
	return nil
}

// location is where a local source lives: path, else uri.
func (s Source) location() string {
	if s.Path != "" {
		return s.Path
	}
	return s.URI
}

// Validate checks options.
func (o Options) Validate(field string) error {
	if o.Schedule != "" {
		if _, err := jobs.ParseEvery(field+".schedule", o.Schedule); err != nil {
			return err
		}
	}
	return nil
}

// Request is POST /ingest's body (the retrieval contract) and an ingest job's
// stored request.
type Request struct {
	Sources []Source `json:"sources"`
	Opts    Options  `json:"opts"`
}

// Validate checks a request, naming the field.
func (r Request) Validate() error {
	if len(r.Sources) == 0 {
		return h4r.Errorf(h4r.EINVALID, "sources", "at least one source is required")
	}
	if len(r.Sources) > 64 {
		return h4r.Errorf(h4r.EINVALID, "sources", "at most 64 sources a request, got %d", len(r.Sources))
	}
	for i, s := range r.Sources {
		if err := s.Validate(fmt.Sprintf("sources[%d]", i)); err != nil {
			return err
		}
	}
	return r.Opts.Validate("opts")
}
