package trace

import (
	"fmt"
	"unicode/utf8"
)

// maxLoggedBytes bounds what a log record quotes of outside input (a
// message's field path, an error naming a key it sent): enough to find
// the fault, never a copy of a crafted message.
const maxLoggedBytes = 200

// clip returns s cut to maxLoggedBytes at a rune boundary, saying how long
// it was.
func clip(s string) string {
	if len(s) <= maxLoggedBytes {
		return s
	}
	cut := maxLoggedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
