//go:build tools

// Package deps pins the module's chosen dependencies (see DESIGN.md) in
// go.mod while the packages that use them are written. It is never built.
package deps

import (
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "golang.org/x/sys/unix"
)
