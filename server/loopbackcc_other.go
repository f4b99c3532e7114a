//go:build !linux

package server

import "net"

// tuneLoopback is a no-op where TCP_CONGESTION is not available (see
// loopbackcc_linux.go).
func tuneLoopback(net.Conn) {}
