package ingest

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// specialRange is a block of addresses that is not the public internet:
// private, loopback, link-local, shared (carrier-grade NAT, where some
// clouds put their metadata service), benchmarking, documentation,
// reserved, multicast. A page or clone fetched from one could reach the
// server's own network.
type specialRange struct {
	prefix netip.Prefix
	name   string
	// embedsV4 marks a translation prefix (NAT64, 6to4): the address
	// stands for an IPv4 one, which decides instead.
	embedsV4 bool
}

// specialRanges are the IANA special-purpose blocks (RFC 6890 and its
// successors) that are not globally reachable, and the IPv6 blocks that
// embed an IPv4 address.
var specialRanges = func() []specialRange {
	rs := []struct {
		cidr, name string
		embeds     bool
	}{
		{"0.0.0.0/8", "this network", false},
		{"10.0.0.0/8", "private", false},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT, cloud metadata)", false},
		{"127.0.0.0/8", "loopback", false},
		{"169.254.0.0/16", "link-local", false},
		{"172.16.0.0/12", "private", false},
		{"192.0.0.0/24", "IETF protocol assignments", false},
		{"192.0.2.0/24", "documentation", false},
		{"192.88.99.0/24", "6to4 relay anycast", false},
		{"192.168.0.0/16", "private", false},
		{"198.18.0.0/15", "benchmarking", false},
		{"198.51.100.0/24", "documentation", false},
		{"203.0.113.0/24", "documentation", false},
		{"224.0.0.0/4", "multicast", false},
		{"240.0.0.0/4", "reserved", false},
		{"::/96", "unspecified, loopback or IPv4-compatible", false},
		{"64:ff9b::/96", "NAT64", true},
		{"64:ff9b:1::/48", "local-use NAT64", false},
		{"100::/64", "discard-only", false},
		{"2001::/23", "IETF protocol assignments (Teredo included)", false},
		{"2001:db8::/32", "documentation", false},
		{"2002::/16", "6to4", true},
		{"fc00::/7", "unique local", false},
		{"fe80::/10", "link-local", false},
		{"fec0::/10", "site-local", false},
		{"ff00::/8", "multicast", false},
	}
	out := make([]specialRange, len(rs))
	for i, r := range rs {
		out[i] = specialRange{netip.MustParsePrefix(r.cidr), r.name, r.embeds}
	}
	return out
}()

// specialAddr names the special-purpose block a lies in, or "" for a
// public address. An IPv4-mapped IPv6 address is its IPv4 address; a
// NAT64 or 6to4 address is judged by the IPv4 address it embeds.
func specialAddr(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	for _, r := range specialRanges {
		if !r.prefix.Contains(a) {
			continue
		}
		if !r.embedsV4 {
			return r.name
		}
		if name := specialAddr(embeddedV4(a, r.prefix)); name != "" {
			return r.name + " of a " + name + " address"
		}
		return ""
	}
	return ""
}

// embeddedV4 is the IPv4 address inside a NAT64 (its last 32 bits) or
// 6to4 (bits 16 to 48) address.
func embeddedV4(a netip.Addr, p netip.Prefix) netip.Addr {
	b := a.As16()
	if p.Bits() == 16 { // 2002::/16
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return netip.AddrFrom4([4]byte(b[12:16]))
}

// refusePrivate is a dialer Control that refuses every address that is
// not public (specialAddr): checked on the address actually dialled,
// after DNS, so that a name resolving to one is refused too.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("checking the address dialled: %w", err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("checking the address dialled: %q is not an IP address", host)
	}
	if name := specialAddr(a); name != "" {
		return fmt.Errorf("%s is a private, loopback or link-local address (%s), and H4R_INGEST_ALLOW_PRIVATE_URLS is off", host, name)
	}
	return nil
}
