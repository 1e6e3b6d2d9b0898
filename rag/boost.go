package rag

import (
	"path"
	"slices"
	"strings"

	"github.com/h4r/h4r"
)

// Boosts of the working context, added to the engine's score as shares
// of the top result's score (the engine's scores are relative to the
// candidates): a chunk of a file the agent names (files,
// git.changed_files) gains FileBoost times the top score, one of the
// working tree TreeBoost times it.
const (
	FileBoost = 0.5
	TreeBoost = 0.15
)

// Over-fetch with a working context: the engine is asked for
// max(overFetch*k, k+overFetchMin) results (at most h4r.MaxLimit).
const (
	overFetch    = 3
	overFetchMin = 20
)

// k is the number of chunks wanted.
func (r *QueryRequest) k() int {
	if r.K != nil {
		return *r.K
	}
	return h4r.DefaultLimit
}

// contextFiles are the files and changed files, cleaned.
func (r *QueryRequest) contextFiles() []string {
	var out []string
	add := func(fs []string) {
		for _, f := range fs {
			if f = cleanPath(f); f != "" && f != "." {
				out = append(out, f)
			}
		}
	}
	add(r.Files)
	if r.Git != nil {
		add(r.Git.ChangedFiles)
	}
	return out
}

func cleanPath(p string) string {
	p = strings.TrimSpace(strings.ReplaceAll(p, "\\", "/"))
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// Boost ranks up the results of the request's working context and sorts
// them by the boosted score (stable: ties keep the engine's order). A
// result's path matches a context file when one is the other or ends
// with it at a "/" (a repository-relative path and an absolute one name
// the same file); it is in the working tree when its (absolute) path
// lies under working_dir. It returns the results and how many were boosted; the
// engine's results are not changed.
func Boost(r QueryRequest, results []h4r.Result) ([]h4r.Result, int) {
	files := r.contextFiles()
	wd := cleanPath(r.WorkingDir)
	if len(files) == 0 && wd == "" {
		return results, 0
	}
	out := slices.Clone(results)
	top := 0.0
	for _, res := range out {
		top = max(top, res.Score)
	}
	boosted := 0
	for i := range out {
		p := resultPath(out[i])
		if p == "" {
			continue
		}
		f := 0.0
		if slices.ContainsFunc(files, func(c string) bool { return samePath(p, c) }) {
			f += FileBoost
		}
		if wd != "" && inTree(p, wd) {
			f += TreeBoost
		}
		if f > 0 {
			out[i].Score += f * top
			boosted++
		}
	}
	slices.SortStableFunc(out, func(a, b h4r.Result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out, boosted
}

func resultPath(res h4r.Result) string {
	if res.Citation != nil && res.Citation.Path != "" {
		return cleanPath(res.Citation.Path)
	}
	return cleanPath(firstString(res.Content, "path", "file_path"))
}

// samePath: equal, or one ends with "/"+the other.
func samePath(a, b string) bool {
	return a == b || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

// inTree: p is an absolute path under wd.
func inTree(p, wd string) bool {
	return strings.HasPrefix(p, "/") && strings.HasPrefix(p, strings.TrimSuffix(wd, "/")+"/")
}
