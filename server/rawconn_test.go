package server_test

import (
	"testing"

	"github.com/sluice/sluice/internal/kraw"
)

// rawConn speaks the protocol by hand (package kraw), for requests kgo
// would never send and for looking at exact responses.
type rawConn = kraw.Conn

func dialRaw(t testing.TB, addr string) *rawConn { return kraw.Dial(t, addr) }
