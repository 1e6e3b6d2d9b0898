package config

import (
	"strings"
)

// EnvExample returns the text of .env.example: every variable of Vars with
// its description as a comment and its default as the value. An empty value
// means "use the default", so the file can be copied to .env unedited.
func EnvExample() string {
	var b strings.Builder
	b.WriteString("# H4R configuration: every environment variable H4R reads, set to its default.\n")
	b.WriteString("# Copy to .env (or export the variables, or write them in the YAML file that\n# H4R_CONFIG names) and change what you need. An empty\n")
	b.WriteString("# value means the default. Invalid values stop h4r at start, naming the variable.\n")
	b.WriteString("#\n")
	b.WriteString("# Generated from config.Vars(); do not edit by hand. After changing the table:\n")
	b.WriteString("#   go test ./config -run TestEnvExampleFile -update\n")
	for _, v := range Vars() {
		b.WriteString("\n")
		desc := v.Description
		if len(v.Aliases) > 0 {
			desc += " Also read as " + strings.Join(v.Aliases, ", ") + " (whole milliseconds)."
		}
		for _, line := range wrap(desc, 78) {
			b.WriteString("# ")
			b.WriteString(line)
			b.WriteString("\n")
		}
		b.WriteString(v.Name)
		b.WriteString("=")
		b.WriteString(v.Default)
		b.WriteString("\n")
	}
	return b.String()
}

// wrap splits text into lines of at most width bytes, breaking at spaces (a
// single longer word gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	var line strings.Builder
	for _, word := range strings.Fields(text) {
		if line.Len() > 0 && line.Len()+1+len(word) > width {
			lines = append(lines, line.String())
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(word)
	}
	if line.Len() > 0 {
		lines = append(lines, line.String())
	}
	return lines
}
