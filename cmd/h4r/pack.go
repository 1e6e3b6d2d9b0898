package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/embed"
)

// cmdPack builds one context pack against the local store and prints it,
// readable or as JSON.
func cmdPack(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("pack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `pack "query" [flags]`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files (SCS_POLICY_DIR)")
	sf := addSpecialistFlags(fs)
	qtype := fs.String("type", string(h4r.DefaultQueryType), "query type: semantic, keyword, hybrid or causal")
	limit := fs.Int("limit", h4r.DefaultLimit, "how many results at most")
	maxTokens := fs.Int("max-tokens", 0, "token budget (default: SCS_MAX_TOKENS_DEFAULT)")
	asJSON := fs.Bool("json", false, "print the pack as JSON")
	withDemo := fs.Bool("demo", false, "load the bundled example corpus when the store is empty")
	explain := fs.String("explain", h4r.ExplainKept, "which items to explain: kept, or all (with why each other candidate was left out)")
	graph := fs.Bool("graph", true, "include the causal graph among the evidence (--graph=false leaves it out)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{`pack takes one query, e.g. h4r pack "login test failures with selector issues"`}
	}
	spec, err := sf.specialist()
	if err != nil {
		return err
	}
	req := h4r.ContextRequest{
		Query: h4r.Query{Type: h4r.QueryType(*qtype), Text: pos[0]},
		Limit: *limit,
		// The readable view draws the causal graph among the evidence
		// whatever CONTEXT_PACK_INCLUDE_GRAPH says for API callers.
		IncludeGraph: graph,
		Explain:      *explain,
	}
	if *maxTokens > 0 {
		req.Budget = &h4r.Budget{MaxTokens: *maxTokens}
	}

	a, err := openApp(ctx, cfg, app.WithLogger(cfg.Logger(stderr)))
	if err != nil {
		return err
	}
	defer a.Close()
	if *withDemo {
		if n, err := demo.LoadIfEmpty(ctx, a.Store); err != nil {
			return fmt.Errorf("loading the demo corpus: %w", err)
		} else if n > 0 {
			if _, err := a.LearnEmbedder(ctx); err != nil && !errors.Is(err, embed.ErrNotLearned) {
				return fmt.Errorf("learning the embedder from the demo corpus: %w", err)
			}
		}
	}
	plan, err := req.Plan("")
	if err != nil {
		return err
	}
	// The CLI opens the store itself, so its user could read every item:
	// its packs explain what policy hid, as an audit key's do.
	plan.Audit = true
	p, err := a.Engine.Run(ctx, spec, plan)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	printPack(stdout, spec, pos[0], p)
	return nil
}

func splitList(s string) []string {
	out := []string{}
	for _, g := range strings.Split(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// maxLeftOutLines caps the "Left out" list; the JSON has every item.
const maxLeftOutLines = 15

// printPack writes the pack for a person: evidence with signal bars, the
// TL;DR, affordances, and what was left out and why.
func printPack(w io.Writer, spec h4r.Specialist, query string, p *h4r.Pack) {
	x := p.Explainability
	fmt.Fprintf(w, "Context pack for %s (%s): %q\n", spec.ID, spec.SecurityLevel, query)
	fmt.Fprintf(w, "status %s · %d candidates · %d kept · %d redacted · %d dropped by policy · %d dropped by budget · %.1f ms\n",
		p.Status, p.TotalCount, x.Slicing.TotalKept, x.Slicing.TotalRedacted, x.Slicing.TotalDroppedPolicy, x.Slicing.TotalDroppedBudget, x.Timings.TotalMs)
	fmt.Fprintf(w, "budget used: %d/%d bytes · %d/%d tokens · %d/%d items\n",
		x.Slicing.BudgetUsed.Bytes, x.Slicing.BudgetLimit.Bytes, x.Slicing.BudgetUsed.EstimatedTokens, x.Slicing.BudgetLimit.EstimatedTokens,
		x.Slicing.BudgetUsed.Items, x.Slicing.BudgetLimit.Items)

	if len(x.TLDR.Sentences) > 0 {
		fmt.Fprintln(w, "\nTL;DR")
		for _, s := range x.TLDR.Sentences {
			fmt.Fprintf(w, "  %s [%s]\n", s.Text, s.ItemID)
		}
	}

	fmt.Fprintln(w, "\nEvidence")
	if len(p.Results) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for i, r := range p.Results {
		redacted := ""
		if r.Metadata.Redacted {
			redacted = "  redacted: " + strings.Join(r.Metadata.RedactedFields, ", ")
		}
		fmt.Fprintf(w, "  %d. %s  %s  score %.3f  via %s  %d tokens%s\n", i+1, r.ID, r.Kind, r.Score, r.Metadata.Source, r.Metadata.Tokens, redacted)
		if r.Signals != nil {
			for s := h4r.Signal(0); s < h4r.NumSignals; s++ {
				fmt.Fprintf(w, "       %-11s %s %.2f\n", s, bar(r.Signals[s], 20), r.Signals[s])
			}
		}
		fmt.Fprintf(w, "       %s\n", ellipsis(r.Text, 160))
	}

	if len(x.Affordances) > 0 {
		fmt.Fprintln(w, "\nSuggested actions")
		for _, a := range x.Affordances {
			fmt.Fprintf(w, "  %-22s %.2f  %s\n", a.Type, a.Confidence, a.Description)
		}
	}

	var left []h4r.ItemExplanation
	for _, it := range x.Items {
		if it.Reason != h4r.ReasonKept {
			left = append(left, it)
		}
	}
	if len(left) > 0 {
		fmt.Fprintln(w, "\nLeft out")
		for _, it := range left[:min(len(left), maxLeftOutLines)] {
			fmt.Fprintf(w, "  %-30s %-14s score %.3f  %s\n", it.ID, it.Reason, it.Score, it.Detail)
		}
		if rest := left[min(len(left), maxLeftOutLines):]; len(rest) > 0 {
			byReason := map[string]int{}
			for _, it := range rest {
				byReason[it.Reason]++
			}
			var parts []string
			for _, r := range []string{h4r.ReasonPolicy, h4r.ReasonMinScore, h4r.ReasonBudgetBytes, h4r.ReasonBudgetTokens, h4r.ReasonBudgetItems} {
				if n := byReason[r]; n > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", n, r))
				}
			}
			fmt.Fprintf(w, "  … and %d more (%s); --json lists them all\n", len(rest), strings.Join(parts, ", "))
		}
	}
	if g := x.CausalGraph; g != nil && len(g.Edges) > 0 {
		fmt.Fprintln(w, "\nCausal graph")
		for _, e := range g.Edges {
			fmt.Fprintf(w, "  %s —%s→ %s\n", e.Source, e.Type, e.Target)
		}
	}
	if len(x.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings")
		for _, m := range x.Warnings {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
}

// bar draws v in [0, 1] as a bar of width cells.
func bar(v float64, width int) string {
	n := int(v*float64(width) + 0.5)
	n = max(0, min(width, n))
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

func ellipsis(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
