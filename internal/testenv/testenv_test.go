package testenv

import (
	"testing"
)

// TestNeedsProcess checks both runs: under -short the subtest is skipped
// before its body goes on, otherwise NeedsProcess lets it run.
func TestNeedsProcess(t *testing.T) {
	ran := false
	t.Run("guarded", func(t *testing.T) {
		NeedsProcess(t, "nothing")
		ran = true
	})
	if testing.Short() && ran {
		t.Fatal("under -short the guarded body ran")
	}
	if !testing.Short() && !ran {
		t.Fatal("without -short the guarded body did not run")
	}
}
