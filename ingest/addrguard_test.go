package ingest

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestRefusePrivate: every special-purpose block is refused at dial time,
// an IPv4-mapped or NAT64 or 6to4 address by the IPv4 address it stands
// for, and public addresses pass.
func TestRefusePrivate(t *testing.T) {
	cases := []struct {
		name, addr string
		refused    bool
	}{
		{"this network 0.0.0.0", "0.0.0.0", true},
		{"this network 0.1.2.3", "0.1.2.3", true},
		{"private 10/8", "10.1.2.3", true},
		{"shared address space 100.64/10 low", "100.64.0.1", true},
		{"shared address space cloud metadata", "100.100.100.200", true},
		{"shared address space high", "100.127.255.254", true},
		{"just above shared address space", "100.128.0.1", false},
		{"loopback", "127.0.0.1", true},
		{"loopback other", "127.8.9.10", true},
		{"link-local metadata", "169.254.169.254", true},
		{"private 172.16/12", "172.31.255.1", true},
		{"public 172.32", "172.32.0.1", false},
		{"IETF protocol assignments 192.0.0/24", "192.0.0.170", true},
		{"documentation 192.0.2/24", "192.0.2.10", true},
		{"private 192.168/16", "192.168.1.1", true},
		{"benchmarking 198.18/15", "198.18.0.1", true},
		{"benchmarking 198.19", "198.19.255.255", true},
		{"public 198.20", "198.20.0.1", false},
		{"multicast 224/4", "239.1.2.3", true},
		{"reserved 240/4", "240.0.0.1", true},
		{"broadcast", "255.255.255.255", true},
		{"public IPv4", "93.184.216.34", false},
		{"public IPv4 8.8.8.8", "8.8.8.8", false},
		{"IPv6 unspecified", "::", true},
		{"IPv6 loopback", "::1", true},
		{"IPv4-compatible IPv6", "::10.0.0.1", true},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1", true},
		{"IPv4-mapped shared space", "::ffff:100.64.0.1", true},
		{"IPv4-mapped public", "::ffff:93.184.216.34", false},
		{"NAT64 of loopback", "64:ff9b::7f00:1", true},
		{"NAT64 of metadata", "64:ff9b::a9fe:a9fe", true},
		{"NAT64 of shared space", "64:ff9b::100.64.0.1", true},
		{"NAT64 of public", "64:ff9b::5db8:d822", false},
		{"local-use NAT64", "64:ff9b:1::1", true},
		{"6to4 of private", "2002:a00:1::1", true},
		{"6to4 of public", "2002:5db8:d822::1", false},
		{"Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2", true},
		{"IPv6 documentation", "2001:db8::1", true},
		{"unique local fc00", "fc00::1", true},
		{"unique local fd00", "fd12:3456::1", true},
		{"link-local fe80", "fe80::1", true},
		{"link-local with zone", "fe80::1%eth0", true},
		{"site-local", "fec0::1", true},
		{"multicast ff02", "ff02::1", true},
		{"multicast ff0e", "ff0e::1", true},
		{"public IPv6", "2606:4700:4700::1111", false},
		{"public IPv6 google", "2001:4860:4860::8888", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := refusePrivate("tcp", net.JoinHostPort(c.addr, "443"), nil)
			if got := err != nil; got != c.refused {
				t.Fatalf("refusePrivate(%s) = %v, want refused=%v", c.addr, err, c.refused)
			}
			if err != nil && !strings.Contains(err.Error(), "H4R_INGEST_ALLOW_PRIVATE_URLS") {
				t.Errorf("error %q does not name the setting", err)
			}
		})
	}
	if err := refusePrivate("tcp", "not-an-address", nil); err == nil {
		t.Error("an address without a port passed")
	}
	if err := refusePrivate("tcp", "example.com:443", nil); err == nil {
		t.Error("a host name passed (the dialler only sees IP addresses)")
	}
}

// FuzzSpecialAddr: no address crashes the check, and an IPv4 address
// answers as its IPv4-mapped and NAT64 forms do.
func FuzzSpecialAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "100.64.0.1", "8.8.8.8", "::1", "64:ff9b::a9fe:a9fe", "2002:a00::", "fe80::1%x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			_ = refusePrivate("tcp", net.JoinHostPort(s, "1"), nil)
			return
		}
		got := specialAddr(a)
		if a.Is4() {
			mapped := netip.AddrFrom16(a.As16())
			if (specialAddr(mapped) == "") != (got == "") {
				t.Fatalf("%s and its mapped form %s disagree", a, mapped)
			}
			b := a.As4()
			nat64 := netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
			if (specialAddr(nat64) == "") != (got == "") {
				t.Fatalf("%s and its NAT64 form %s disagree", a, nat64)
			}
		}
	})
}
