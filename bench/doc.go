// Package bench holds Sluice's throughput benchmarks. engine_test.go
// measures every registered storage backend through the engine.Log
// interface:
//
//	go test -run '^$' -bench 'Engine' -benchtime 200ms ./bench/
//
// Sub-benchmarks are named key=value (backend=segment/batch=16KiB) so that
// benchstat can slice them; scripts/bench-storage.sh runs them next to a dd
// baseline and prints the table kept in BENCHMARKS.md.
package bench
