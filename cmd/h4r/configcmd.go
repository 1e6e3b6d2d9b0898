package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/h4r/h4r/config"
)

// cmdConfig prints the effective configuration: every setting, its value
// (secrets masked) and where it came from: default, file, environment or
// flag. It takes serve's flags, so that it shows what serve would run with.
func cmdConfig(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	loaded, err := config.Load(lookupEnv)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	cfg := &loaded.Config
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "config [--changed] [--json] [serve's flags]   the effective configuration and where each value came from")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address HOST:PORT (H4R_ADDR)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files (SCS_POLICY_DIR)")
	fs.StringVar(&cfg.APIKeysFile, "api-keys-file", cfg.APIKeysFile, "file of API keys (H4R_API_KEYS_FILE)")
	changed := fs.Bool("changed", false, "only the settings that are not at their default")
	asJSON := fs.Bool("json", false, "print JSON: [{name, value, source}]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("config takes no arguments, got %q", fs.Args())}
	}
	if v, _ := lookupEnv(configFlagMarker); v != "" {
		loaded.Sources["H4R_CONFIG"] = config.SourceFlag
	}
	flagVars := map[string]string{"addr": "H4R_ADDR", "data-dir": "H4R_DATA_DIR", "policy-dir": "SCS_POLICY_DIR", "api-keys-file": "H4R_API_KEYS_FILE"}
	fs.Visit(func(f *flag.Flag) {
		if name, ok := flagVars[f.Name]; ok {
			loaded.Sources[name] = config.SourceFlag
		}
	})
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	type row struct {
		Name   string        `json:"name"`
		Value  string        `json:"value"`
		Source config.Source `json:"source"`
	}
	values := cfg.Values()
	var rows []row
	for _, v := range config.Vars() {
		src := loaded.Sources[v.Name]
		if *changed && src == config.SourceDefault {
			continue
		}
		rows = append(rows, row{v.Name, config.Display(v, values[v.Name]), src})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE\tSOURCE")
	for _, r := range rows {
		value := r.Value
		if value == "" {
			value = "(unset)"
		}
		if len(value) > 60 {
			value = value[:57] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, strings.ReplaceAll(value, "\t", " "), r.Source)
	}
	return tw.Flush()
}

// configFlagMarker is a name no environment holds: the lookup of
// withConfigFlag answers it, so that h4r config can say the file came from
// the flag.
const configFlagMarker = "\x00h4r --config"

// withConfigFlag takes a --config FILE (or --config=FILE) out of args,
// wherever it stands, and returns the arguments without it and a lookup
// that answers H4R_CONFIG with FILE: every command reads its settings
// through that variable.
func withConfigFlag(args []string, lookupEnv func(string) (string, bool)) ([]string, func(string) (string, bool), error) {
	var file string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			i = len(args)
		case a == "--config" || a == "-config":
			if i+1 >= len(args) {
				return nil, nil, usageError{"--config needs a file"}
			}
			file = args[i+1]
			i++
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			_, file, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	if file == "" {
		return rest, lookupEnv, nil
	}
	return rest, func(name string) (string, bool) {
		switch name {
		case "H4R_CONFIG":
			return file, true
		case configFlagMarker:
			return "true", true
		}
		return lookupEnv(name)
	}, nil
}
