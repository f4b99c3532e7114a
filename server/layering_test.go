package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// logLifecycleCalls are the methods that open, close, retain, flush or
// checkpoint a partition's log (engine.Store, engine.Log,
// engine.Maintainer), or that reach through a partition to its log. They
// belong to the replica manager (package replica).
var logLifecycleCalls = map[string]bool{
	"Log": true, "OpenLog": true, "CreateLog": true, "DeleteLog": true, "ListLogs": true,
	"ApplyRetention": true, "FlushAll": true, "CheckpointRecoveryPoints": true,
	"SetConfig": true, "SaveHighWatermarks": true, "LoadHighWatermarks": true,
}

// TestServerLeavesLogsToTheReplicaManager: no file of package server
// (tests aside) opens, closes, retains, flushes or checkpoints a log, or
// reaches through a partition to its engine.Log. Handlers ask the replica
// manager for a partition and use its methods (docs/architecture.md).
func TestServerLeavesLogsToTheReplicaManager(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && logLifecycleCalls[sel.Sel.Name] {
				t.Errorf("%s: calls %s: that is the replica manager's (package replica)", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 50 {
		t.Fatalf("checked %d files of package server; the glob found too few", checked)
	}
}
