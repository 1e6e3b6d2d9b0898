package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/decision"
)

// cmdQuery answers a decision-trace preset against the local store,
// through the policy slicer, as GET /v1/decision-traces does.
func cmdQuery(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "query --preset NAME [flags]   presets: "+strings.Join(decision.Presets(), ", "))
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files (SCS_POLICY_DIR)")
	var q decision.PresetQuery
	fs.StringVar(&q.Preset, "preset", "", "the query: "+strings.Join(decision.Presets(), ", "))
	fs.StringVar(&q.Epic, "epic", "", "epic id (decision_traces_by_precedent, decisions_by_epic)")
	fs.StringVar(&q.Decision, "decision", "", "decision id cited as precedent (decision_traces_by_precedent)")
	fs.StringVar(&q.Pattern, "pattern", "", "pattern or memory id (decisions_by_pattern)")
	fs.StringVar(&q.File, "file", "", "file path (file_assignment_history)")
	fs.StringVar(&q.Status, "status", "", "approved or needs_changes (review_decisions)")
	fs.IntVar(&q.Limit, "limit", 50, "how many decisions at most")
	sf := addSpecialistFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{fmt.Sprintf("query takes no arguments besides flags, got %q", pos[0])}
	}
	spec, err := sf.specialist()
	if err != nil {
		return err
	}
	a, err := openApp(ctx, cfg, app.WithLogger(cfg.Logger(stderr)))
	if err != nil {
		return err
	}
	defer a.Close()
	ans, err := a.Decisions.Preset(ctx, spec, q)
	if err != nil {
		if e, ok := err.(*h4r.Error); ok && e.Field != "" {
			return usageError{fmt.Sprintf("--%s: %s", e.Field, e.Message)}
		}
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ans)
	}
	printDecisions(stdout, q.Preset, ans)
	return nil
}

// printDecisions writes one block per decision: when, type, epic, the
// rationale, the rejected alternatives and the outcome.
func printDecisions(w io.Writer, preset string, ans *decision.Answer) {
	fmt.Fprintf(w, "%s: %d decisions", preset, len(ans.DecisionTraces))
	if ans.Withheld > 0 {
		fmt.Fprintf(w, " (%d withheld by policy)", ans.Withheld)
	}
	fmt.Fprintln(w)
	for _, d := range ans.DecisionTraces {
		when := ""
		if ms, ok := d["timestamp"].(float64); ok {
			when = time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "\n%v  %s  %v  epic %v  by %v\n", d["id"], when, d["decision_type"], orDash(d["epic_id"]), d["agent_name"])
		if dec, err := json.Marshal(d["decision"]); err == nil {
			fmt.Fprintf(w, "  decision: %s\n", dec)
		}
		if r, ok := d["rationale"].(string); ok && r != "" {
			fmt.Fprintf(w, "  why: %s\n", r)
		}
		if alts, ok := d["alternatives"].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					fmt.Fprintf(w, "  rejected: %v (%v)\n", m["option"], m["rejected_because"])
				}
			}
		}
		if o, ok := d["outcome"]; ok {
			out, _ := json.Marshal(o)
			fmt.Fprintf(w, "  outcome: %s\n", out)
		}
	}
}

func orDash(v any) any {
	if v == nil || v == "" {
		return "-"
	}
	return v
}
