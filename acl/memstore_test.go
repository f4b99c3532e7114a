package acl_test

import (
	"testing"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/acl/acltest"
)

func TestMemStore(t *testing.T) {
	acltest.Run(t, func(*testing.T) acl.Store { return acl.NewMemStore() })
}
