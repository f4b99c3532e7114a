//go:build !linux

package server

// mapFrame: frames are read into the Go heap on this platform.
func mapFrame(int) []byte { return nil }

func unmapFrame([]byte) {}

func adviseHugeFrame([]byte) {}
