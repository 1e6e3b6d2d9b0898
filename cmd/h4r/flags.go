package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/h4r/h4r"
)

// describeFlags makes fs's usage print synopsis and then each flag as the
// README writes it (--name VALUE), to fs's output. --help then prints it,
// and run exits 0.
func describeFlags(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: h4r %s\n", synopsis)
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if first {
				fmt.Fprint(out, "\nFlags:\n")
				first = false
			}
			value, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if value != "" {
				line += " " + strings.ToUpper(value)
			}
			fmt.Fprintf(out, "%-28s %s", line, usage)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				fmt.Fprintf(out, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
}

// releaseVersion is set by scripts/release.sh (-ldflags -X) to the tag or
// commit the archives are built from; a go build or go install leaves it
// empty and the module version is printed.
var releaseVersion string

// versionLine is what h4r version prints: the module version and the VCS
// revision the binary was built from, as the build recorded them.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "h4r (no build information)"
	}
	version := info.Main.Version
	if releaseVersion != "" {
		version = releaseVersion
	}
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	revision := settings["vcs.revision"]
	switch {
	case revision == "":
		revision = "unknown (built without VCS stamping, e.g. -buildvcs=false)"
	case settings["vcs.modified"] == "true":
		revision += " (modified)"
	}
	line := fmt.Sprintf("h4r %s, revision %s, %s", version, revision, info.GoVersion)
	if t := settings["vcs.time"]; t != "" {
		line += ", committed " + t
	}
	return line
}

// specialistFlags are the --specialist, --level and --groups flags of the
// commands that read as someone (pack, query).
type specialistFlags struct {
	id, level, groups *string
}

// addSpecialistFlags declares them on fs.
func addSpecialistFlags(fs *flag.FlagSet) specialistFlags {
	return specialistFlags{
		id:     fs.String("specialist", "", "specialist id; without it the command reads as the anonymous public specialist"),
		level:  fs.String("level", "", "security level of --specialist: public (default), internal, confidential or restricted"),
		groups: fs.String("groups", "", "comma-separated authorized groups of --specialist"),
	}
}

// specialist is the specialist the flags name. A level or groups without
// --specialist is refused: they would otherwise be ignored, and the command
// would read as the anonymous public specialist while the user believes
// it reads with the clearance they gave.
func (f specialistFlags) specialist() (h4r.Specialist, error) {
	if *f.id == "" {
		if *f.level != "" || *f.groups != "" {
			return h4r.Specialist{}, usageError{"--level and --groups describe a specialist: give its id with --specialist (without it the command reads as the anonymous public specialist)"}
		}
		return h4r.Anonymous(), nil
	}
	level := *f.level
	if level == "" {
		level = "public"
	}
	lvl, ok := h4r.ParseSecurityLevel(level)
	if !ok {
		return h4r.Specialist{}, usageError{fmt.Sprintf("--level %q: want public, internal, confidential or restricted", level)}
	}
	return h4r.Specialist{Type: "specialist", ID: *f.id, SecurityLevel: lvl, AuthorizedGroups: splitList(*f.groups)}, nil
}
