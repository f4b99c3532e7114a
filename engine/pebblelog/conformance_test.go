package pebblelog_test

import (
	"testing"

	"github.com/sluice/sluice/engine/enginetest"
	_ "github.com/sluice/sluice/engine/pebblelog"
)

// TestConformance runs the cross-backend suite against "pebble".
func TestConformance(t *testing.T) { enginetest.Run(t, "pebble") }
