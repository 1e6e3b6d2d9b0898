package procmem

import (
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  string
		want    Resident
		wantErr string
	}{
		{"linux_status", "Name:\th4r\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n", Resident{Current: 100 << 20, Peak: 200 << 20}, ""},
		{"missing_peak", "VmRSS:\t  1 kB\n", Resident{}, "no VmRSS and VmHWM"},
		{"not_kb", "VmRSS:\t1 MB\nVmHWM:\t1 kB\n", Resident{}, "VmRSS"},
		{"not_a_number", "VmRSS:\tmany kB\nVmHWM:\t1 kB\n", Resident{}, "not a size"},
		{"negative", "VmRSS:\t-4 kB\nVmHWM:\t1 kB\n", Resident{}, "not a size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse([]byte(tc.status))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parse = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// Touching 64 MiB raises this process's resident set, and the peak is
// never below the current figure.
func TestSelfSeesAnAllocation(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(buf)
	if after.Current < before.Current+48<<20 {
		t.Errorf("resident %d MiB after touching 64 MiB, %d MiB before", after.Current>>20, before.Current>>20)
	}
	if after.Peak < after.Current {
		t.Errorf("peak %d below current %d", after.Peak, after.Current)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("VmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"))
	f.Add([]byte("VmRSS:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parse(b)
		if err == nil && (r.Current < 0 || r.Peak < 0) {
			t.Fatalf("negative size accepted: %+v", r)
		}
	})
}
