package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/oja-exchange/oja/engine"
)

// resolveTimeout bounds the DNS look-up CheckURL makes.
const resolveTimeout = 3 * time.Second

// specialPrefixes are IANA's special-purpose address registries (IPv4
// and IPv6, as of 2026) beyond what netip's predicates cover — none is a
// partner's web server: this network, shared address space (carrier NAT;
// Alibaba's metadata service lives there), IETF protocol assignments, the
// documentation TEST-NETs, AS112 and other anycast services, benchmarking,
// reserved, broadcast; IPv4-mapped, IPv4-compatible, IPv4-translated,
// NAT64, 6to4 and Teredo space (each can carry any IPv4 address, loopback
// included; an IPv4-mapped address is judged by its IPv4 address),
// discard-only, ORCHID and the other IETF assignments,
// documentation and SRv6 SIDs.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.31.196.0/24"),
	netip.MustParsePrefix("192.52.193.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.175.48.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),           // unspecified, loopback, IPv4-compatible
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped (Unmap handles the address; the range is refused whole)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001::/23"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2620:4f:8000::/48"),
	netip.MustParsePrefix("3fff::/20"),
	netip.MustParsePrefix("5f00::/16"),
}

// Forbidden reports whether a delivery must not reach ip: loopback,
// private (RFC 1918, fc00::/7 — AWS's fd00:ec2::254 metadata among them),
// link-local (169.254.169.254, the usual cloud metadata address, among
// them), multicast, unspecified or another special-purpose range.
func Forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsValid() {
		return true
	}
	for _, p := range specialPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Resolver looks a host name up (net.DefaultResolver.LookupNetIP).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// CheckURL decides whether a partner may register raw as an endpoint in
// mode m. It returns the problem in one line ("" when acceptable): not an
// absolute http(s) URL, credentials in it, or — unless allowPrivate —
// plain http in live mode or a host that is, names or resolves to a
// forbidden address (Forbidden).
func CheckURL(ctx context.Context, raw string, m engine.Mode, allowPrivate bool, resolve Resolver) string {
	if len(raw) > engine.WebhookURLBytesMax {
		return fmt.Sprintf("must be at most %d bytes", engine.WebhookURLBytesMax)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	if u.Scheme != "https" && m == engine.ModeLive && !allowPrivate {
		return "must use https in live mode"
	}
	if allowPrivate {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if Forbidden(ip) {
			return "must not point at a loopback, private, link-local, metadata or other special-purpose address"
		}
		return ""
	}
	if numericHost(host) {
		// inet_aton's shorthand and hex forms (127.1, 0x7f.0.0.1, 2130706433)
		// are addresses some resolvers accept: not a name to look up.
		return "must be a domain name or a complete IP address"
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") ||
		strings.HasSuffix(host, ".local") || !strings.Contains(host, ".") {
		return "must not point at a loopback, private, link-local, metadata or other special-purpose address"
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return "host does not resolve"
	}
	for _, ip := range addrs {
		if Forbidden(ip) {
			return "resolves to a loopback, private, link-local, metadata or other special-purpose address"
		}
	}
	return ""
}

// numericHost reports whether every label of host is a number (decimal,
// or hex with 0x).
func numericHost(host string) bool {
	for _, label := range strings.Split(host, ".") {
		l := strings.TrimPrefix(label, "0x")
		if l == "" || strings.Trim(l, "0123456789abcdef") != "" || (l == label && strings.Trim(l, "0123456789") != "") {
			return false
		}
	}
	return true
}

// errForbiddenAddress is a refused connection (guardedDialer).
var errForbiddenAddress = errors.New("webhook: refusing to connect to a loopback, private, link-local, metadata or other special-purpose address")

// guardedDialer refuses, at connect time, every address Forbidden names:
// what a name resolves to when the delivery is made is what counts.
func guardedDialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return errForbiddenAddress
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || Forbidden(ip) {
				return errForbiddenAddress
			}
			return nil
		}
	}
	return d
}
