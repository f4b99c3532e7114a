package zerocopy

import (
	"bytes"
	"net"
	"testing"
)

// A Shared goes to its owner's free function when the last reference goes:
// the owner's and each slice's; once freed, TryAcquire refuses it until the
// owner reuses it; a release too many panics.
func TestSharedReferences(t *testing.T) {
	freed := 0
	sh := NewShared([]byte("0123456789"), func(*Shared) { freed++ })
	if !sh.TryAcquire() {
		t.Fatal("TryAcquire refused a live buffer")
	}
	s := SharedSlice(sh, 2, 5)
	if b, err := s.AppendTo(nil); err != nil || string(b) != "23456" || s.Len() != 5 {
		t.Fatalf("slice bytes %q, len %d, %v", b, s.Len(), err)
	}
	if _, _, _, ok := s.File(); ok {
		t.Fatal("a shared slice reports a file")
	}
	sh.Release() // the owner lets go: the slice still holds it
	if freed != 0 {
		t.Fatal("freed while a slice held it")
	}
	s.Release()
	if freed != 1 {
		t.Fatalf("freed %d times after the last release", freed)
	}
	if sh.TryAcquire() {
		t.Fatal("TryAcquire took a freed buffer")
	}
	sh.Reuse()
	if !sh.TryAcquire() {
		t.Fatal("TryAcquire refused a reused buffer")
	}
	sh.Release()
	sh.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("a release too many did not panic")
		}
	}()
	sh.Release()
}

// A Writer sends a shared slice from memory and releases it after the
// write, not before.
func TestWriterReleasesSharedAfterWrite(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	freed := 0
	sh := NewShared([]byte("hello, shared"), func(*Shared) { freed++ })
	w := NewWriter(a)
	w.Write([]byte("<"))
	if !sh.TryAcquire() {
		t.Fatal("TryAcquire refused a live buffer")
	}
	w.AddSlice(SharedSlice(sh, 0, 13))
	w.Write([]byte(">"))
	sh.Release() // the owner's
	got := make(chan []byte)
	go func() {
		buf := make([]byte, 15)
		n := 0
		for n < len(buf) {
			m, err := b.Read(buf[n:])
			if err != nil {
				break
			}
			n += m
		}
		got <- buf[:n]
	}()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if g := <-got; !bytes.Equal(g, []byte("<hello, shared>")) {
		t.Fatalf("sent %q", g)
	}
	if freed != 1 {
		t.Fatalf("freed %d times after the flush", freed)
	}
}
