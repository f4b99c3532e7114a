package server

// When a share partition's start offset is chosen (issue 29's "a raw
// ShareFetch right after producing acquires nothing"): as Kafka's
// SharePartition.maybeInitialize / startOffsetDuringInitialization, a share
// partition with no persisted state starts where the group's
// share.auto.offset.reset points at the moment it is first loaded, which is
// the group's first ShareFetch of it. Under latest (the default), records
// produced before that fetch are not delivered, even if the member joined
// before they were produced; under earliest they are.

import (
	"testing"
	"time"
)

func TestShareResetLatestAtFirstFetch(t *testing.T) {
	// Three records before the group's first fetch: skipped under latest.
	e := startShareServer(t, 3, func(c *ShareGroupConfig) { c.AutoOffsetReset = "latest" })
	cl := e.client()
	if got := acquired(t, e.fetch(cl, sfetch{member: "a", max: 10})); len(got) != 0 {
		t.Fatalf("latest: acquired %v produced before the first fetch", got)
	}
	// What is produced after it is delivered, from the start offset on.
	e.produce(2, 3)
	wantRanges(t, acquired(t, e.fetch(cl, sfetch{member: "a", epoch: 1, max: 10})), [3]int64{3, 4, 1})
	// The reset applies once: changing it later moves nothing.
	e.members.mu.Lock()
	e.members.cfg.AutoOffsetReset = "earliest"
	e.members.mu.Unlock()
	if got := acquired(t, e.fetch(cl, sfetch{member: "a", epoch: 2, max: 10})); len(got) != 0 {
		t.Fatalf("acquired %v after the reset changed", got)
	}
}

func TestShareResetChangedBeforeFirstFetch(t *testing.T) {
	// The group's reset as it is at the first fetch counts, not as it was
	// when the records were produced (the CLI test's order: produce, then
	// earliest, then the first fetch).
	e := startShareServer(t, 5, func(c *ShareGroupConfig) { c.AutoOffsetReset = "latest" })
	e.members.mu.Lock()
	e.members.cfg.AutoOffsetReset = "earliest"
	e.members.mu.Unlock()
	e.clock.add(time.Second)
	wantRanges(t, acquired(t, e.fetch(e.client(), sfetch{member: "a", max: 10})), [3]int64{0, 4, 1})
}
