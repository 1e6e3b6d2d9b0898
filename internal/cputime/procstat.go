package cputime

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// userHZ is the unit of the times in /proc/pid/stat: Linux reports them
// in USER_HZ, which is 100 on every architecture Go runs Linux on.
const userHZ = 100

// parseStat returns utime + stime of a /proc/pid/stat line. The command
// name (field 2) is in parentheses and may hold spaces and parentheses
// itself, so the fields are counted from the last ')': state is the first
// after it, utime the twelfth and stime the thirteenth.
func parseStat(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, errors.New("no command name in parentheses in /proc/pid/stat")
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/pid/stat has %d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, field := range f[11:13] {
		n, err := strconv.ParseUint(string(field), 10, 63)
		if err != nil {
			return 0, fmt.Errorf("/proc/pid/stat: CPU time %q: %w", field, err)
		}
		ticks += n
	}
	if ticks > uint64(1<<63-1)/uint64(time.Second/userHZ) {
		return 0, fmt.Errorf("/proc/pid/stat: CPU time of %d ticks is out of range", ticks)
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}
