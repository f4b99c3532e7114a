package logevery

import (
	"testing"
	"time"
)

func TestNote(t *testing.T) {
	var c Counter
	t0 := time.Unix(1000, 0)
	if n, due := c.Note(t0, time.Minute); !due || n != 1 {
		t.Fatalf("first event: %d, %v; want 1, true", n, due)
	}
	for i := range 999 {
		if _, due := c.Note(t0.Add(time.Duration(i)*time.Millisecond), time.Minute); due {
			t.Fatalf("event %d within the period made a line", i)
		}
	}
	if c.Pending() != 999 {
		t.Fatalf("pending %d, want 999", c.Pending())
	}
	if n, due := c.Note(t0.Add(time.Minute), time.Minute); !due || n != 1000 {
		t.Fatalf("after the period: %d, %v; want 1000, true", n, due)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending %d after a line, want 0", c.Pending())
	}
}
