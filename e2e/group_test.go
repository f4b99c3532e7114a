package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupBackends are the storage backends the group tests run the binary with.
var groupBackends = []string{"segment", "pebble"}

// groupSets are the broker settings of the group tests: new groups
// rebalance at once.
func groupSets(backend string) []string {
	return []string{"storage.backend=" + backend, "group.initial.rebalance.delay.ms=0"}
}

// groupClient returns a client of b that produces to the partition each
// record names; closed at Cleanup.
func groupClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceSpread produces n records, record i to partition i%partitions,
// and waits for every acknowledgement.
func produceSpread(t *testing.T, cl *kgo.Client, topic string, partitions, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte("v" + strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

type partOff struct {
	p int32
	o int64
}

// consumeN polls cl until it has n records (failing after 60 s) and
// returns how often each (partition, offset) came.
func consumeN(t *testing.T, cl *kgo.Client, n int) map[partOff]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, total := map[partOff]int{}, 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records within 60s", total, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[partOff{r.Partition, r.Offset}]++
			total++
		})
	}
	return got
}

func createTopicE2E(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

// TestGroupResumeAfterSIGKILL: a group commits, the broker process is
// SIGKILLed and restarted, and a consumer of the group then resumes right
// after the committed offsets (it is configured to start at the earliest
// offset, which would apply had the commits been lost).
func TestGroupResumeAfterSIGKILL(t *testing.T) {
	for _, be := range groupBackends {
		t.Run("backend="+be, func(t *testing.T) {
			b := startBroker(t, t.TempDir(), groupSets(be)...)
			const topic, group, parts = "resume", "g-resume", 3
			prod := groupClient(t, b.addr)
			createTopicE2E(t, kadm.NewClient(prod), topic, parts)
			produceSpread(t, prod, topic, parts, 300)

			newConsumer := func() *kgo.Client {
				cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
					kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.SessionTimeout(6*time.Second), kgo.FetchMaxWait(500*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				return cl
			}
			c := newConsumer()
			got := consumeN(t, c, 300)
			if len(got) != 300 {
				t.Fatalf("consumed %d distinct records, want 300", len(got))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			c.Close()

			start := time.Now()
			b.kill()
			b.restart()
			t.Logf("killed and restarted in %v", time.Since(start))

			// A new deadline: the kill and restart may have used up ctx.
			fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer fcancel()
			adm := kadm.NewClient(groupClient(t, b.addr))
			offs, err := adm.FetchOffsets(fctx, group)
			if err != nil {
				t.Fatalf("fetch offsets after restart: %v\n%s", err, b.logText())
			}
			for p := int32(0); p < parts; p++ {
				if o, ok := offs.Lookup(topic, p); !ok || o.Err != nil || o.At != 100 {
					t.Fatalf("committed offset of partition %d after SIGKILL: %+v (found %v), want 100", p, o, ok)
				}
			}
			produceSpread(t, groupClient(t, b.addr), topic, parts, 30)
			c2 := newConsumer()
			defer c2.Close()
			got = consumeN(t, c2, 30)
			for k, n := range got {
				if k.o < 100 || k.o >= 110 || n != 1 {
					t.Errorf("after restart: partition %d offset %d consumed %d times; want offsets 100..109 once each", k.p, k.o, n)
				}
			}
			if len(got) != 30 {
				t.Errorf("after restart: %d distinct records, want 30", len(got))
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kcatMember is one `kcat -G` balanced consumer printing "partition offset".
type kcatMember struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr lockedBuffer

	mu   sync.Mutex
	seen []partOff
}

func startKcatMember(t *testing.T, kcat, addr, group, topic string) *kcatMember {
	t.Helper()
	m := &kcatMember{done: make(chan struct{})}
	m.cmd = exec.Command(kcat, "-b", addr, "-G", group, "-q", "-u", "-f", "%p %o\n",
		"-X", "auto.offset.reset=earliest", "-X", "heartbeat.interval.ms=500",
		"-X", "session.timeout.ms=6000", topic)
	m.cmd.Stderr = &m.stderr
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var po partOff
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &po.p, &po.o); err == nil {
				m.mu.Lock()
				m.seen = append(m.seen, po)
				m.mu.Unlock()
			}
		}
		_ = m.cmd.Wait()
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends this kcat (SIGTERM, so it leaves the group; SIGKILL after 20 s)
// and waits for it. Safe to call twice.
func (m *kcatMember) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

func (m *kcatMember) records() []partOff {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]partOff(nil), m.seen...)
}

// TestGroupKcatBalanced: two kcat balanced consumers (-G) in one group split
// a 6-partition topic and consume every record exactly once between them.
func TestGroupKcatBalanced(t *testing.T) {
	kcat := need(t, "kcat")
	for _, be := range groupBackends {
		t.Run("backend="+be, func(t *testing.T) {
			b := startBroker(t, t.TempDir(), groupSets(be)...)
			const topic, group, parts, n = "kcat-group", "g-kcat", 6, 6000
			prod := groupClient(t, b.addr)
			adm := kadm.NewClient(prod)
			createTopicE2E(t, adm, topic, parts)

			m1 := startKcatMember(t, kcat, b.addr, group, topic)
			m2 := startKcatMember(t, kcat, b.addr, group, topic)

			// Produce only once both own partitions, so no rebalance
			// happens while records flow.
			deadline := time.Now().Add(60 * time.Second)
			var last string
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				gs, err := adm.DescribeGroups(ctx, group)
				cancel()
				ok := false
				if err == nil {
					g := gs[group]
					owners := map[int32]int{}
					nonEmpty := 0
					for _, mem := range g.Members {
						if a, isC := mem.Assigned.AsConsumer(); isC {
							cnt := 0
							for _, at := range a.Topics {
								for _, p := range at.Partitions {
									owners[p]++
									cnt++
								}
							}
							if cnt > 0 {
								nonEmpty++
							}
						}
					}
					last = fmt.Sprintf("state %s, %d members, %d with partitions, owners %v", g.State, len(g.Members), nonEmpty, owners)
					ok = g.State == "Stable" && len(g.Members) == 2 && nonEmpty == 2 && len(owners) == parts
					for _, c := range owners {
						ok = ok && c == 1
					}
				} else {
					last = err.Error()
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the kcat members did not split the partitions within 60s: %s\nkcat 1: %s\nkcat 2: %s",
						last, m1.stderr.String(), m2.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}

			produceSpread(t, prod, topic, parts, n)
			deadline = time.Now().Add(60 * time.Second)
			for len(m1.records())+len(m2.records()) < n {
				if time.Now().After(deadline) {
					t.Fatalf("kcat members printed %d + %d of %d records within 60s", len(m1.records()), len(m2.records()), n)
				}
				time.Sleep(50 * time.Millisecond)
			}
			m1.stop()
			m2.stop()

			seen := map[partOff]int{}
			partsOf := []map[int32]bool{{}, {}}
			for i, m := range []*kcatMember{m1, m2} {
				for _, po := range m.records() {
					seen[po]++
					partsOf[i][po.p] = true
				}
			}
			for p := range partsOf[0] {
				if partsOf[1][p] {
					t.Errorf("partition %d consumed by both kcat members", p)
				}
			}
			if len(partsOf[0]) == 0 || len(partsOf[1]) == 0 {
				t.Errorf("partitions per member %v %v: want both to consume", partsOf[0], partsOf[1])
			}
			for po, c := range seen {
				if c != 1 || po.o < 0 || po.o >= n/parts {
					t.Errorf("partition %d offset %d printed %d times; want offsets 0..%d once each", po.p, po.o, c, n/parts-1)
				}
			}
			if len(seen) != n {
				t.Errorf("%d distinct records printed, want %d", len(seen), n)
			}
			if t.Failed() {
				t.Logf("kcat 1 stderr: %s\nkcat 2 stderr: %s", strings.TrimSpace(m1.stderr.String()), strings.TrimSpace(m2.stderr.String()))
			}
		})
	}
}
