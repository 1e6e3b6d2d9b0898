package trace

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r"
)

// Webhook limits.
const (
	// WebhookPerRepoPerMinute is the document's rate limit of the webhook.
	WebhookPerRepoPerMinute = 100
	maxDeliveryID           = 128
)

// WebhookResult is the document's answer to POST /webhook/github.
type WebhookResult struct {
	Processed     bool `json:"processed"`
	TracesUpdated int  `json:"traces_updated"`
}

// VerifySignature checks GitHub's X-Hub-Signature-256 header: the
// HMAC-SHA256 of the raw body under secret, compared in constant time. An
// empty secret refuses everything: an unconfigured webhook is closed.
func VerifySignature(secret []byte, body []byte, header string) error {
	if len(secret) == 0 {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the GitHub webhook is not configured (set H4R_GITHUB_WEBHOOK_SECRET): every delivery is refused")
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return h4r.Errorf(h4r.EUNAUTH, "X-Hub-Signature-256", "the X-Hub-Signature-256 header (sha256=<hex HMAC of the body>) is required")
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return h4r.Errorf(h4r.EUNAUTH, "X-Hub-Signature-256", "the signature is not hexadecimal")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return h4r.Errorf(h4r.EUNAUTH, "X-Hub-Signature-256", "the signature does not match the body under the configured secret")
	}
	return nil
}

// ghRepository, ghCommit, … are the parts of GitHub's payloads used here.
// Pointers mark required fields, so that a missing one is named; every
// other field GitHub sends is ignored.
type ghRepository struct {
	FullName      *string `json:"full_name"`
	DefaultBranch *string `json:"default_branch"`
}

type ghCommit struct {
	ID        *string   `json:"id"`
	Message   string    `json:"message"`
	Timestamp time.Time `json:"timestamp"`
}

type ghPush struct {
	Ref        *string       `json:"ref"`
	After      string        `json:"after"`
	Repository *ghRepository `json:"repository"`
	Commits    []ghCommit    `json:"commits"`
}

type ghPullRequest struct {
	Action      *string `json:"action"`
	Number      int     `json:"number"`
	PullRequest *struct {
		Merged         *bool      `json:"merged"`
		MergedAt       *time.Time `json:"merged_at"`
		MergeCommitSHA *string    `json:"merge_commit_sha"`
		Head           *struct {
			Ref *string `json:"ref"`
			SHA *string `json:"sha"`
		} `json:"head"`
		Base *struct {
			Ref *string `json:"ref"`
		} `json:"base"`
	} `json:"pull_request"`
	Repository *ghRepository `json:"repository"`
}

// revertPattern finds the commit a revert names, as git revert writes it.
var revertPattern = regexp.MustCompile(`This reverts commit ([0-9a-fA-F]{7,64})`)

// HandleGitHub applies one verified GitHub delivery: a merged pull request
// lands its traces, a push to the default branch lands its commits and
// marks the commits its reverts name as reverted. Other events, and
// pull_request and push deliveries that change no outcome, are answered
// processed: false and cost nothing more than their parse.
//
// A delivery that would change outcomes is recognised by the SHA-256 of
// its body, which the signature covers, not by its X-GitHub-Delivery id,
// which it does not: a captured body sent again under a fresh id is the
// same delivery. One already applied (by any replica: the records are
// items in the shared store) within DeliveryTTL is answered processed with
// nothing updated and is not counted; only new ones count against their
// repository's rate limit.
func (s *Service) HandleGitHub(ctx context.Context, event, delivery string, body []byte) (_ *WebhookResult, err error) {
	ctx, span := s.tracer.Start(ctx, "webhook.github")
	defer func() { endSpan(span, err) }()
	if err := validDelivery(delivery); err != nil {
		return nil, err
	}
	var (
		repo    string
		updates func(ctx context.Context) (int, error)
	)
	switch event {
	case "pull_request":
		var p ghPullRequest
		if err := decodeLenient(body, &p); err != nil {
			return nil, err
		}
		if repo, err = p.repo(); err != nil {
			return nil, err
		}
		if p.merged() && s.lands(*p.PullRequest.Base.Ref, p.Repository.DefaultBranch) {
			updates = func(ctx context.Context) (int, error) { return s.landPullRequest(ctx, repo, &p) }
		}
	case "push":
		var p ghPush
		if err := decodeLenient(body, &p); err != nil {
			return nil, err
		}
		if repo, err = p.repo(); err != nil {
			return nil, err
		}
		if branch, ok := strings.CutPrefix(*p.Ref, "refs/heads/"); ok && s.lands(branch, p.Repository.DefaultBranch) {
			updates = func(ctx context.Context) (int, error) { return s.landPush(ctx, repo, &p) }
		}
	default:
		s.metrics.delivery(event, "ignored")
		return &WebhookResult{}, nil
	}
	if updates == nil { // an open or unmerged pull request, a push to another branch
		s.metrics.delivery(event, "ignored")
		return &WebhookResult{}, nil
	}
	deliveryID := DeliveryItemID(body)
	if applied, err := s.deliveryApplied(ctx, deliveryID); err != nil {
		return nil, fmt.Errorf("checking delivery %s: %w", delivery, err)
	} else if applied {
		s.metrics.delivery(event, "duplicate")
		return &WebhookResult{Processed: true}, nil
	}
	allowed, wait, err := s.allowDelivery(ctx, repo)
	if err != nil {
		return nil, err
	}
	if !allowed {
		s.metrics.delivery(event, "refused")
		return nil, &RateLimitError{
			Err:  h4r.Errorf(h4r.EEXHAUSTED, "repository.full_name", "rate limit of %d webhook deliveries a minute for %s reached", WebhookPerRepoPerMinute, repo),
			Wait: wait,
		}
	}
	n, err := updates(ctx)
	if err != nil {
		return nil, err
	}
	// Recorded after the outcomes: a crash in between applies the delivery
	// again on GitHub's redelivery, which changes nothing (ApplyOutcome is
	// idempotent).
	if err := s.recordDelivery(ctx, deliveryID, delivery, event, repo, n); err != nil {
		return nil, err
	}
	s.metrics.delivery(event, "applied")
	s.pruneEvery(ctx)
	return &WebhookResult{Processed: true, TracesUpdated: n}, nil
}

// RateLimitError is a delivery refused by its repository's rate window,
// with the time until the window reopens (the answer's Retry-After).
type RateLimitError struct {
	Err  *h4r.Error
	Wait time.Duration
}

func (e *RateLimitError) Error() string             { return e.Err.Error() }
func (e *RateLimitError) Unwrap() error             { return e.Err }
func (e *RateLimitError) RetryAfter() time.Duration { return e.Wait }

func validDelivery(id string) error {
	if id == "" {
		return h4r.Errorf(h4r.EINVALID, "X-GitHub-Delivery", "the X-GitHub-Delivery header is required")
	}
	if len(id) > maxDeliveryID {
		return h4r.Errorf(h4r.EINVALID, "X-GitHub-Delivery", "a delivery id is at most %d characters", maxDeliveryID)
	}
	for _, c := range id {
		if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return h4r.Errorf(h4r.EINVALID, "X-GitHub-Delivery", "a delivery id holds letters, digits and '-', got %q", id)
		}
	}
	return nil
}

// decodeLenient decodes a body GitHub defines: unknown fields are fine.
func decodeLenient(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return h4r.Errorf(h4r.EINVALID, te.Field, "%s must be %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return h4r.Errorf(h4r.EINVALID, "", "the webhook body is not valid JSON: %v", err)
	}
	return nil
}

func (r *ghRepository) name(field string) (string, error) {
	if r == nil {
		return "", h4r.Errorf(h4r.EINVALID, field, "%s is required", field)
	}
	if r.FullName == nil {
		return "", h4r.Errorf(h4r.EINVALID, field+".full_name", "%s.full_name is required", field)
	}
	if err := ValidRepo(*r.FullName, field+".full_name"); err != nil {
		return "", err
	}
	return *r.FullName, nil
}

func (p *ghPush) repo() (string, error) {
	repo, err := p.Repository.name("repository")
	if err != nil {
		return "", err
	}
	if p.Ref == nil {
		return "", h4r.Errorf(h4r.EINVALID, "ref", "ref is required")
	}
	if p.Repository.DefaultBranch == nil {
		return "", h4r.Errorf(h4r.EINVALID, "repository.default_branch", "repository.default_branch is required")
	}
	for i, c := range p.Commits {
		if c.ID == nil {
			return "", h4r.Errorf(h4r.EINVALID, fmt.Sprintf("commits[%d].id", i), "commits[%d].id is required", i)
		}
		if err := ValidSHA(strings.ToLower(*c.ID), fmt.Sprintf("commits[%d].id", i)); err != nil {
			return "", err
		}
	}
	return repo, nil
}

func (p *ghPullRequest) repo() (string, error) {
	repo, err := p.Repository.name("repository")
	if err != nil {
		return "", err
	}
	if p.Action == nil {
		return "", h4r.Errorf(h4r.EINVALID, "action", "action is required")
	}
	if p.PullRequest == nil {
		return "", h4r.Errorf(h4r.EINVALID, "pull_request", "pull_request is required")
	}
	if p.PullRequest.Merged == nil && *p.Action == "closed" {
		return "", h4r.Errorf(h4r.EINVALID, "pull_request.merged", "pull_request.merged is required")
	}
	if p.PullRequest.Head == nil || p.PullRequest.Head.SHA == nil || p.PullRequest.Head.Ref == nil {
		return "", h4r.Errorf(h4r.EINVALID, "pull_request.head", "pull_request.head.ref and pull_request.head.sha are required")
	}
	if p.PullRequest.Base == nil || p.PullRequest.Base.Ref == nil {
		return "", h4r.Errorf(h4r.EINVALID, "pull_request.base.ref", "pull_request.base.ref is required")
	}
	return repo, nil
}

// lands reports whether a merge into branch lands traces: the
// repository's default branch (from the payload) and the configured
// landing branches do; any other branch does not.
func (s *Service) lands(branch string, defaultBranch *string) bool {
	return defaultBranch != nil && branch == *defaultBranch || slices.Contains(s.landing, branch)
}

func (p *ghPullRequest) merged() bool {
	return *p.Action == "closed" && p.PullRequest.Merged != nil && *p.PullRequest.Merged
}

// landPullRequest lands the traces of a merged pull request: its head
// commit, its merge (or squash) commit, and every pending trace of the
// repository on its head branch, which are the commits it merged.
func (s *Service) landPullRequest(ctx context.Context, repo string, p *ghPullRequest) (int, error) {
	pr := p.PullRequest
	landedAt := pr.MergedAt
	if landedAt == nil {
		now := s.now().UTC()
		landedAt = &now
	}
	via := "#" + strconv.Itoa(p.Number)
	shas := map[string]bool{strings.ToLower(*pr.Head.SHA): true}
	if pr.MergeCommitSHA != nil && *pr.MergeCommitSHA != "" {
		shas[strings.ToLower(*pr.MergeCommitSHA)] = true
	}
	// The pending traces of the head branch, by the store's metadata
	// query: a merge reads the traces it lands, not the store.
	found, err := s.store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{
		Kinds:    []string{KindTrace},
		Metadata: map[string]any{"repo": repo, "branch": *pr.Head.Ref, "status": string(StatusPending)},
	}, Limit: h4r.MaxFindLimit})
	if err != nil {
		return 0, fmt.Errorf("finding the traces of pull request %s in %s: %w", via, repo, err)
	}
	for _, it := range found {
		if sha, ok := it.Metadata.Extra["sha"].(string); ok {
			shas[sha] = true
		}
	}
	n := 0
	for sha := range shas {
		changed, err := s.ApplyOutcome(ctx, repo, sha, Outcome{Status: StatusLanded, LandedAt: landedAt, MergedVia: &via})
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// landPush lands every commit pushed to the default branch and reverts
// the commits their messages say they revert.
func (s *Service) landPush(ctx context.Context, repo string, p *ghPush) (int, error) {
	via := strings.ToLower(p.After)
	n := 0
	for _, c := range p.Commits {
		sha := strings.ToLower(*c.ID)
		at := c.Timestamp.UTC()
		if c.Timestamp.IsZero() {
			at = s.now().UTC()
		}
		o := Outcome{Status: StatusLanded, LandedAt: &at}
		if via != "" {
			o.MergedVia = &via
		}
		changed, err := s.ApplyOutcome(ctx, repo, sha, o)
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
		for _, m := range revertPattern.FindAllStringSubmatch(c.Message, -1) {
			by := sha
			changed, err := s.ApplyOutcome(ctx, repo, strings.ToLower(m[1]), Outcome{Status: StatusReverted, RevertedBy: &by, LandedAt: &at})
			if err != nil {
				return n, err
			}
			if changed {
				n++
			}
		}
	}
	return n, nil
}

// recordDelivery stores the delivery, under the hash of its body, as an
// item, so that every replica on the store sees it applied. Trust 0 and a
// group of its own keep the default policy from ever delivering it.
func (s *Service) recordDelivery(ctx context.Context, id, delivery, event, repo string, updated int) error {
	zero, one := 0.0, 1.0
	it := h4r.Item{
		ID: id, Kind: KindDelivery,
		Text:    fmt.Sprintf("GitHub %s delivery for %s", event, repo),
		Content: map[string]any{"event": event, "repo": repo, "delivery": delivery, "traces_updated": updated},
		Metadata: h4r.Metadata{
			CreatedAt: s.now().UTC(), Trust: &zero, Sensitivity: &one,
			RestrictedToGroups: []string{"h4r-webhook-deliveries"}, Source: "github",
		},
	}
	if _, err := s.store.Upsert(ctx, []h4r.Item{it}); err != nil {
		return fmt.Errorf("recording delivery %s: %w", delivery, err)
	}
	return nil
}
