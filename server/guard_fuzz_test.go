package server

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// independentlyLoopback is the browser guard's rule written with other
// parsers (net/url, net.ParseIP): the host of an http URL is localhost or
// a loopback address.
func independentlyLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// FuzzBrowserGuard throws arbitrary Host and Origin values at the browser
// guard's checks and holds them to the rule DNS rebinding and cross-site
// requests are kept out by: whatever they accept as loopback, an
// independent parse agrees is localhost or a loopback address. (They may
// refuse more than it does: a refusal costs a caller nothing it may have.)
func FuzzBrowserGuard(f *testing.F) {
	for _, seed := range []string{
		"localhost", "localhost:8080", "LOCALHOST", "127.0.0.1", "127.0.0.1:8080", "127.255.0.9", "[::1]", "[::1]:8080",
		"::1", "[::ffff:127.0.0.1]:80", "evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "0.0.0.0",
		"[::]:80", "localhost:", "127.0.0.1:80:80", "[fe80::1%25lo]:80", "", "null", "localhost@evil.example",
		"evil.example#@localhost", "127.1", "0x7f.1", "2130706433",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if loopbackHost(s) && !independentlyLoopback("http://"+s) {
			t.Errorf("loopbackHost(%q) is true, but its host is not loopback", s)
		}
		for _, origin := range []string{s, "http://" + s, "https://" + s} {
			if loopbackOrigin(origin) && !independentlyLoopback(origin) {
				t.Errorf("loopbackOrigin(%q) is true, but its host is not loopback", origin)
			}
		}
	})
}
