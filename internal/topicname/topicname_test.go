package topicname

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{strings.Repeat("x", MaxLen), true},
		{strings.Repeat("x", MaxLen+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"with space", false},
		{"slash/", false},
		{"é", false},
		{"nul\x00", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.name)
			if (err == nil) != tc.ok {
				t.Fatalf("Validate(%q) = %v, want ok %v", tc.name, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
		})
	}
}

func TestCollides(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a.b", "a_b", true},
		{"a_b", "a.b", true},
		{"a.b", "a.b", true},
		{"a.b", "a-b", false},
		{"ab", "a_b", false},
	} {
		if got := Collides(tc.a, tc.b); got != tc.want {
			t.Errorf("Collides(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
