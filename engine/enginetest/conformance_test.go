package enginetest_test

import (
	"testing"

	"github.com/sluice/sluice/engine/enginetest"

	_ "github.com/sluice/sluice/engine/memlog"
)

// TestConformance runs the suite against every backend, one subtest each:
// go test -run Conformance -v ./engine/enginetest/
func TestConformance(t *testing.T) {
	for _, backend := range []string{
		"memory",
	} {
		t.Run(backend, func(t *testing.T) { enginetest.Run(t, backend) })
	}
}
