package enginetest_test

import (
	"testing"

	"github.com/sluice/sluice/engine/enginetest"

	_ "github.com/sluice/sluice/engine/memlog"
	_ "github.com/sluice/sluice/engine/pebblelog"
	_ "github.com/sluice/sluice/segment"
)

// TestConformance runs the suite against every backend, one subtest each:
//
//	go test -count=1 -race -run Conformance -v ./engine/enginetest/
func TestConformance(t *testing.T) {
	for _, backend := range []string{
		"memory",
		"pebble",
		"segment",
	} {
		t.Run(backend, func(t *testing.T) { enginetest.Run(t, backend) })
	}
}
