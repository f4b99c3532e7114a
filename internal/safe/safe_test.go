package safe

import (
	"errors"
	"log/slog"
	"testing"
)

func TestCall(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	want := errors.New("plain")
	if err := Call(log, "x", func() error { return want }); err != want {
		t.Fatalf("error passed through: %v", err)
	}
	if err := Call(log, "x", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := Call(log, "append", func() error {
		var m map[string]int
		m["boom"]++ // nil map write
		return nil
	})
	if !errors.Is(err, ErrPanic) {
		t.Fatalf("panic not turned into ErrPanic: %v", err)
	}
}
