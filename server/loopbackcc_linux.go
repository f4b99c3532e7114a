package server

import (
	"net"
	"strings"

	"golang.org/x/sys/unix"
)

// A connection that stays on this machine and would use BBR gets Reno
// instead (tuneLoopback). BBR paces every send: without the fq
// qdisc (loopback has none) the kernel paces in TCP itself, arming an
// hrtimer and deferring transmission to softirq work as each
// segment goes out. On loopback there is no queue, no loss and no
// bottleneck to probe, so pacing buys nothing and costs the sender CPU per
// byte. The leader of an RF 3 partition on one machine sends every
// produced byte twice (its followers' fetches): with the machine's default
// (net.ipv4.tcp_congestion_control=bbr) scripts/bench-replication.sh
// measured the leader at 1.03-1.44 s of CPU per GB acknowledged, with Reno
// or CUBIC on its sockets 0.70-0.92 (BENCHMARKS.md, "Replicated produce"). Reno is
// always permitted without privileges (net.ipv4.tcp_allowed_congestion_control
// always holds it) and, with no loss to react to, grows its window as
// CUBIC or any other loss-based algorithm would. Other congestion controls
// and connections leaving the machine are left alone.
const loopbackCongestion = "reno"

// tuneLoopback applies loopbackCongestion to nc when it stays on this
// machine (loopbackPair) and its congestion control is a BBR variant. It is
// best effort: an error leaves the connection as it was.
func tuneLoopback(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok || !loopbackPair(tc.LocalAddr(), tc.RemoteAddr()) {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		cc, err := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if err != nil || !strings.HasPrefix(cc, "bbr") {
			return
		}
		_ = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, loopbackCongestion)
	})
}

// loopbackPair reports whether a TCP connection between the two addresses
// stays on this machine (the kernel routes it over the loopback device):
// both are loopback addresses, or both are the same address (a broker
// reaching another on this host by its own address).
func loopbackPair(local, remote net.Addr) bool {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	return ok1 && ok2 && (l.IP.IsLoopback() && r.IP.IsLoopback() || l.IP.Equal(r.IP))
}
