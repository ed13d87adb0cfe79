package probe

import (
	"net"
	"testing"
)

// A server that answered (no such name, refused) is final; a query that
// timed out or never left is asked again.
func TestServerAnswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *net.DNSError
		want bool
	}{
		{"no such name", &net.DNSError{Err: "no such host", IsNotFound: true}, true},
		{"refused", &net.DNSError{Err: "server misbehaving", IsTemporary: true}, true},
		{"timeout", &net.DNSError{Err: "i/o timeout", IsTimeout: true, IsTemporary: true}, false},
		{"network unreachable", &net.DNSError{Err: "dial udp 192.0.2.1:53: connect: network is unreachable"}, false},
		{"connection refused", &net.DNSError{Err: "read udp 192.0.2.12:40000->192.0.2.1:53: read: connection refused"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverAnswered(tc.err); got != tc.want {
				t.Errorf("serverAnswered(%q) = %v, want %v", tc.err.Err, got, tc.want)
			}
		})
	}
}
