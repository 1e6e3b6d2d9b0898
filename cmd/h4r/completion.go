package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// cmdCompletion prints a completion script for a shell: the commands, and
// file names after them.
func cmdCompletion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "completion bash|zsh|fish   e.g. source <(h4r completion bash)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"completion takes one shell: bash, zsh or fish"}
	}
	words := strings.Join(commands, " ")
	switch fs.Arg(0) {
	case "bash":
		fmt.Fprintf(stdout, `# h4r completion for bash: source <(h4r completion bash)
_h4r() {
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "${COMP_WORDS[1]}"))
  else
    COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
  fi
}
complete -F _h4r h4r
`, words)
	case "zsh":
		fmt.Fprintf(stdout, `#compdef h4r
# h4r completion for zsh: source <(h4r completion zsh)
_h4r() {
  if (( CURRENT == 2 )); then
    compadd -- %s
  else
    _files
  fi
}
compdef _h4r h4r
`, words)
	case "fish":
		fmt.Fprintf(stdout, "# h4r completion for fish: h4r completion fish | source\ncomplete -c h4r -n __fish_use_subcommand -f -a %q\n", words)
	default:
		return usageError{fmt.Sprintf("completion: unknown shell %q (want bash, zsh or fish)", fs.Arg(0))}
	}
	return nil
}
