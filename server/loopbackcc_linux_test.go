package server

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLoopbackPair(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 9092} }
	for _, tc := range []struct {
		name          string
		local, remote net.Addr
		want          bool
	}{
		{"ipv4 loopback", tcp("127.0.0.1"), tcp("127.0.0.1"), true},
		{"ipv4 loopback range", tcp("127.0.0.1"), tcp("127.0.0.2"), true},
		{"ipv6 loopback", tcp("::1"), tcp("::1"), true},
		{"same host address", tcp("10.0.0.5"), tcp("10.0.0.5"), true},
		{"remote host", tcp("10.0.0.5"), tcp("10.0.0.6"), false},
		{"loopback to remote", tcp("127.0.0.1"), tcp("10.0.0.6"), false},
		{"not tcp", &net.UnixAddr{Name: "a"}, &net.UnixAddr{Name: "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loopbackPair(tc.local, tc.remote); got != tc.want {
				t.Errorf("loopbackPair(%v, %v) = %v, want %v", tc.local, tc.remote, got, tc.want)
			}
		})
	}
}

// TestTuneLoopback: an accepted loopback connection using BBR is switched
// to Reno; one using another congestion control is left alone.
func TestTuneLoopback(t *testing.T) {
	for _, tc := range []struct{ name, from, want string }{
		{"bbr", "bbr", loopbackCongestion},
		{"cubic", "cubic", "cubic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, nc := tcpLoopbackPair(t)
			if err := setCongestion(nc, tc.from); err != nil {
				t.Skipf("cannot set %s here (not built in, or not permitted): %v", tc.from, err)
			}
			tuneLoopback(nc)
			if got := congestion(t, nc); got != tc.want {
				t.Errorf("congestion control %q after tuneLoopback, want %q", got, tc.want)
			}
		})
	}
}

func setCongestion(nc net.Conn, cc string) error {
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	}); err != nil {
		return err
	}
	return serr
}

func congestion(t *testing.T, nc net.Conn) string {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		cc, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return cc
}
