package schemareg_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice/sluice/schemareg"
)

// wideRecord is an Avro record of n int fields, and one more with a
// default when extra.
func wideRecord(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Wide","fields":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"f%d","type":"int"}`, i)
	}
	b.WriteString(extra)
	b.WriteString(`]}`)
	return b.String()
}

// A compatibility check runs without the view's lock held (a writer
// queued behind a long check would stall every reader), for a
// registration and for POST /compatibility alike.
func TestCompatibilityWithoutViewLock(t *testing.T) {
	b, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	reg := b.SchemaRegistry()
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}`
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/locks/versions", map[string]any{"schema": v1}); st != 200 {
		t.Fatalf("v1: %d %s", st, raw)
	}
	var checks, held atomic.Int32
	defer schemareg.SetCompatHook(func() {
		checks.Add(1)
		if !reg.ViewLockFree() {
			held.Add(1)
		}
	})()
	if st, _, raw := httpDo(t, addr, "POST", "/compatibility/subjects/locks/versions/latest", map[string]any{"schema": v2}); st != 200 {
		t.Fatalf("compatibility: %d %s", st, raw)
	}
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/locks/versions", map[string]any{"schema": v2}); st != 200 {
		t.Fatalf("v2: %d %s", st, raw)
	}
	if checks.Load() < 2 || held.Load() != 0 {
		t.Fatalf("%d compatibility checks, %d of them with the view lock held", checks.Load(), held.Load())
	}
}

// A record of 20,000 fields is checked in linear work: hamba/avro's
// checker scanned the writer's fields for every reader field and rendered
// each record once per field to fingerprint it (gigabytes of strings for
// one check). The assertion is on bytes allocated, not on time.
func TestWideRecordCompatibility(t *testing.T) {
	_, cl := startRegistry(t, t.TempDir())
	addr := registryAddr(t, cl)
	const n = 20000
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/wide/versions", map[string]any{"schema": wideRecord(n, "")}); st != 200 {
		t.Fatalf("v1: %d %.300s", st, raw)
	}
	for _, tc := range []struct {
		name   string
		extra  string
		compat bool
	}{
		{"new field with a default", `,{"name":"extra","type":"int","default":0}`, true},
		{"new field without a default", `,{"name":"extra","type":"int"}`, false},
		{"new field by an alias", `,{"name":"g0","aliases":["f0"],"type":"long"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"schema": wideRecord(n, tc.extra)}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			st, m, raw := httpDo(t, addr, "POST", "/compatibility/subjects/wide/versions/latest", body)
			runtime.ReadMemStats(&after)
			if st != 200 || m["is_compatible"] != tc.compat {
				t.Fatalf("%d %.300s, want is_compatible %v", st, raw, tc.compat)
			}
			// Parsing the 20,000-field request takes some tens of MB;
			// the quadratic check took gigabytes.
			if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 1024 {
				t.Fatalf("one compatibility check allocated %d MiB", mb)
			} else {
				t.Logf("allocated %d MiB", mb)
			}
		})
	}
	if st, _, raw := httpDo(t, addr, "POST", "/subjects/wide/versions", map[string]any{"schema": wideRecord(n, `,{"name":"extra","type":"int","default":0}`)}); st != 200 {
		t.Fatalf("v2: %d %.300s", st, raw)
	}
}
