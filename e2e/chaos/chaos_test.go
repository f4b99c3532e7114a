package chaos

// The scenarios. TestChaos starts one cluster and runs each scenario on a
// topic of its own (3 partitions, replication factor 3,
// min.insync.replicas=2) while one idempotent acks=all producer per
// partition writes: warm up until every partition has acknowledgements,
// inject the fault, hold it for faultFor, heal, wait until every partition
// has acknowledgements again (and a little longer), stop producing, read
// everything back. A scenario fails when an acknowledged record is missing,
// or when a partition never takes a write again after the heal.
//
// SLUICE_CHAOS=full (make chaos) runs every scenario, the random one for
// two minutes; without it (make test) a subset of about a minute runs.
// SLUICE_CHAOS_SEED fixes the random scenario's seed (it is logged).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// faultFor is how long each fault holds: twice the session timeout,
	// so that every fault lasts long enough for ZooKeeper and the ISR to
	// notice.
	faultFor = 2 * sessionTimeout
	// recoverWithin bounds the wait for every partition to take writes
	// again after the heal.
	recoverWithin = 90 * time.Second
	// steadyFor is how long producing goes on once every partition
	// recovered.
	steadyFor = 3 * time.Second
	// randomFor is the random scenario's length.
	randomFor = 2 * time.Minute
)

// env is what a scenario's fault sees.
type env struct {
	t     *testing.T
	c     *cluster
	topic string
	rng   *rand.Rand
	// start is when the fault began.
	start time.Time
	// note adds to the scenario's description in the log.
	note func(format string, args ...any)
}

// scenario injects its fault, holds it and heals before it returns.
type scenario struct {
	name  string
	short bool // part of the default subset
	fault func(e *env)
}

var scenarios = []scenario{
	{name: "leader isolated (minority)", short: true, fault: func(e *env) {
		_, id := e.pickLeader()
		e.c.nw.isolate(nodeOf(id))
		e.hold(faultFor)
		e.c.nw.heal()
	}},
	{name: "leader cut off from ZooKeeper", fault: func(e *env) {
		_, id := e.pickLeader()
		e.c.nw.cut(nodeOf(id), "zk")
		e.hold(faultFor)
		e.c.nw.heal()
	}},
	{name: "leader cut off from followers", fault: func(e *env) {
		_, id := e.pickLeader()
		e.c.nw.cut(nodeOf(id), otherBrokers(id)...)
		e.hold(faultFor)
		e.c.nw.heal()
	}},
	{name: "controller isolated", fault: func(e *env) {
		id := e.c.controller()
		e.note("controller %d", id)
		e.c.nw.isolate(nodeOf(id))
		e.hold(faultFor)
		e.c.nw.heal()
	}},
	{name: "leader SIGSTOPped", short: true, fault: func(e *env) {
		_, id := e.pickLeader()
		if err := e.c.brokers[id].signal(syscall.SIGSTOP); err != nil {
			e.t.Fatal(err)
		}
		e.hold(faultFor)
		if err := e.c.brokers[id].signal(syscall.SIGCONT); err != nil {
			e.t.Fatal(err)
		}
	}},
	{name: "leader SIGKILLed, restarted at once", fault: func(e *env) {
		// The restart comes within the session timeout: the broker
		// waits for its dead process's registration to expire.
		_, id := e.pickLeader()
		e.c.brokers[id].kill()
		e.c.startBroker(id)
	}},
	{name: "random partitions and SIGKILLs (2 min)", fault: randomFaults},
}

func otherBrokers(id int32) []string {
	var out []string
	for b := int32(1); b <= 3; b++ {
		if b != id {
			out = append(out, nodeOf(b))
		}
	}
	return out
}

// pickLeader returns a partition of the scenario's topic and its leader,
// preferring a leader that is not the controller (so the leader's faults
// and the controller's stay apart).
func (e *env) pickLeader() (int32, int32) {
	ctl := e.c.controller()
	leaders := e.c.leaders(e.topic)
	best := int32(-1)
	for p := int32(0); p < partitions; p++ {
		if l, ok := leaders[p]; ok && l >= 0 && (best < 0 || leaders[best] == ctl && l != ctl) {
			best = p
		}
	}
	if best < 0 {
		e.t.Fatalf("no leader for %s: %v", e.topic, leaders)
	}
	e.note("partition %d led by broker %d (controller %d)", best, leaders[best], ctl)
	return best, leaders[best]
}

// hold waits d.
func (e *env) hold(d time.Duration) { time.Sleep(d) }

// randomFaults runs, for randomFor, one random fault after another, each
// held 2-10 s and followed by 1-5 s of calm: a broker isolated, cut off
// from ZooKeeper, cut off from the other brokers, or from the client; the
// brokers split two against one with ZooKeeper on the smaller side; a
// broker SIGSTOPped; a broker SIGKILLed and restarted (within its session
// timeout: it waits for its old registration to expire).
func randomFaults(e *env) {
	c := e.c
	end := time.Now().Add(randomFor)
	for round := 1; time.Now().Before(end); round++ {
		id := int32(e.rng.IntN(3) + 1)
		b := nodeOf(id)
		hold := time.Duration(2000+e.rng.IntN(8000)) * time.Millisecond
		var what string
		began := time.Now()
		switch e.rng.IntN(7) {
		case 0:
			what = "isolate"
			c.nw.isolate(b)
			time.Sleep(hold)
		case 1:
			what = "cut from zk"
			c.nw.cut(b, "zk")
			time.Sleep(hold)
		case 2:
			what = "cut from brokers"
			c.nw.cut(b, otherBrokers(id)...)
			time.Sleep(hold)
		case 3:
			what = "cut from client"
			c.nw.cut(b, "cl")
			time.Sleep(hold)
		case 4:
			what = "split: it and zk | the other two"
			c.nw.cut("zk", otherBrokers(id)...)
			for _, o := range otherBrokers(id) {
				c.nw.cut(b, o)
			}
			time.Sleep(hold)
		case 5:
			what = "SIGSTOP"
			if err := c.brokers[id].signal(syscall.SIGSTOP); err != nil {
				e.t.Fatal(err)
			}
			time.Sleep(hold)
			if err := c.brokers[id].signal(syscall.SIGCONT); err != nil {
				e.t.Fatal(err)
			}
		case 6:
			what = "SIGKILL, restart"
			c.brokers[id].kill()
			time.Sleep(hold / 2)
			c.startBroker(id) // waits until it has registered again
		}
		c.nw.heal()
		e.note("round %d (+%v): broker %d %s for %v", round, began.Sub(e.start).Round(100*time.Millisecond), id, what, hold.Round(100*time.Millisecond))
		time.Sleep(time.Duration(1000+e.rng.IntN(4000)) * time.Millisecond)
	}
}

func TestChaos(t *testing.T) {
	needTools(t)
	full := os.Getenv("SLUICE_CHAOS") == "full"
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("SLUICE_CHAOS_SEED=%q: %v", s, err)
		}
	}
	t.Logf("full suite: %v (SLUICE_CHAOS=full); random seed %d (SLUICE_CHAOS_SEED)", full, seed)
	c := startCluster(t)
	var results []result
	for i, sc := range scenarios {
		if !full && !sc.short {
			continue
		}
		t.Run(strings.NewReplacer(" ", "_", "(", "", ")", "").Replace(sc.name), func(t *testing.T) {
			c.t, c.nw.t = t, t
			res := runScenario(t, c, sc, fmt.Sprintf("chaos-%d", i), rand.New(rand.NewPCG(seed, uint64(i))))
			results = append(results, res)
		})
	}
	c.t, c.nw.t = t, t
	t.Logf("results (session timeout and replica.lag.time.max.ms %v, faults held %v):\n%s", sessionTimeout, faultFor, table(results))
}

// runScenario runs one scenario on a new topic and checks it.
func runScenario(t *testing.T, c *cluster, sc scenario, topic string, rng *rand.Rand) result {
	c.waitHealthy(90 * time.Second)
	c.createTopic(topic)
	var notes []string
	e := &env{t: t, c: c, topic: topic, rng: rng, note: func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		notes = append(notes, s)
		t.Log(s)
	}}
	w := startWorkload(c, topic)
	defer w.finish(time.Second)
	start := time.Now()
	waitUntil(t, c, 30*time.Second, "acknowledgements on every partition before the fault", func() bool { return w.ackedSince(start) })
	time.Sleep(2 * time.Second)

	faultStart := time.Now()
	e.start = faultStart
	func() {
		defer c.nw.heal() // also when the fault fails the test
		sc.fault(e)
	}()
	faultEnd := time.Now()
	for id, b := range c.brokers {
		if !b.running() {
			t.Errorf("broker %d exited during the scenario\n%s", id, b.logTail(30))
			c.startBroker(id)
		}
	}
	recovered := true
	deadline := time.Now().Add(recoverWithin)
	for !w.ackedSince(faultEnd) {
		if time.Now().After(deadline) {
			recovered = false
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(steadyFor)
	stopped := time.Now()
	w.finish(30 * time.Second)
	c.waitHealthy(90 * time.Second)
	res := w.check(c, sc.name, faultStart, faultEnd, stopped)
	t.Logf("%s: attempted %d, acknowledged %d, lost %d, duplicated %d, reordered %d, read back unacknowledged %d; longest without an ack during the fault %v, after the heal %v (per partition: longest during, from +time after the fault began / longest after: %v); producer errors %v",
		sc.name, res.attempted, res.acked, res.lost, res.duplicated, res.reordered, res.unacked,
		res.gapDuring.Round(100*time.Millisecond), res.gapAfter.Round(100*time.Millisecond), res.perPartition, res.errs)
	if !recovered {
		t.Errorf("%s: a partition took no write within %v of the heal\n%s", sc.name, recoverWithin, c.logTails())
	}
	if res.lost > 0 {
		t.Errorf("%s: %d acknowledged records lost, e.g. %v\n%s", sc.name, res.lost, res.lostExamples, c.logTails())
	}
	return res
}

// waitUntil polls cond every 100 ms for up to within.
func waitUntil(t *testing.T, c *cluster, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s\n%s", within, what, c.logTails())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// table renders results as a Markdown table.
func table(results []result) string {
	var b strings.Builder
	b.WriteString("| scenario | attempted | acknowledged | lost | duplicated | reordered | longest unavailability during fault | after heal |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.1f s | %.1f s |\n", r.scenario, r.attempted, r.acked, r.lost,
			r.duplicated, r.reordered, r.gapDuring.Seconds(), r.gapAfter.Seconds())
	}
	return b.String()
}
