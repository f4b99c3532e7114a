package segment

import (
	"testing"
	"unsafe"
)

// TestLogSize: a Log fits the 320-byte size class (a broker holds one per
// partition). Its config is a shared handle, and the logger and clock are
// the store's.
func TestLogSize(t *testing.T) {
	if n := unsafe.Sizeof(Log{}); n > 320 {
		t.Fatalf("Log is %d bytes, more than 320", n)
	}
}
