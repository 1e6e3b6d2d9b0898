package procmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Resident is a process's resident memory in bytes.
type Resident struct {
	Current int64 // VmRSS
	Peak    int64 // VmHWM: the most it has held since it started
}

// Self returns this process's resident memory.
func Self() (Resident, error) { return read("/proc/self/status") }

// Of returns the resident memory of process pid.
func Of(pid int) (Resident, error) { return read(fmt.Sprintf("/proc/%d/status", pid)) }

func read(path string) (Resident, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Resident{}, fmt.Errorf("reading resident memory: %w", err)
	}
	r, err := parse(b)
	if err != nil {
		return Resident{}, fmt.Errorf("reading resident memory from %s: %w", path, err)
	}
	return r, nil
}

// parse reads VmRSS and VmHWM ("VmRSS:	  123456 kB") from a status file.
func parse(status []byte) (Resident, error) {
	var r Resident
	var found int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &r.Current
		case "VmHWM":
			dst = &r.Peak
		default:
			continue
		}
		num, ok := bytes.CutSuffix(bytes.TrimSpace(rest), []byte(" kB"))
		if !ok {
			return Resident{}, fmt.Errorf("%s: %q is not in kB", name, bytes.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSpace(num)), 10, 64)
		if err != nil || kb < 0 || kb > 1<<50 {
			return Resident{}, fmt.Errorf("%s: %q is not a size in kB", name, bytes.TrimSpace(rest))
		}
		*dst = kb << 10
		found++
	}
	if err := sc.Err(); err != nil {
		return Resident{}, err
	}
	if found < 2 {
		return Resident{}, fmt.Errorf("no VmRSS and VmHWM lines (not Linux?)")
	}
	return r, nil
}
