package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// crashKeys is how many keys the crash tests spread their records over;
// crashPad pads each value so that small segments fill quickly.
const (
	crashKeys = 300
	crashPad  = 96
)

// crashKey and crashValue name record i of a crash test: its key is fixed
// by i, its value says i, so a value read back names the record it came
// from.
func crashKey(i int) string { return fmt.Sprintf("key-%05d", (i*7919)%crashKeys) }

func crashValue(i int) string {
	v := fmt.Sprintf("v%d/", i)
	return v + strings.Repeat("x", max(crashPad-len(v), 0))
}

// crashIndex reads i back from crashValue(i).
func crashIndex(t *testing.T, key string, value []byte) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(string(value), "v%d/", &i); err != nil || crashKey(i) != key || string(value) != crashValue(i) {
		t.Fatalf("key %s: value %.40q is no record this test produced for it", key, value)
	}
	return i
}

// cleanerSets are the broker settings of the crash tests: the cleaner
// runs almost continuously (short backoff), throttled to ioRate bytes a
// second so that a round lasts long enough for a kill to land inside it,
// with a small offset map.
func cleanerSets(ioRate int) []string {
	return []string{
		"storage.backend=segment",
		"log.cleaner.backoff.ms=20",
		fmt.Sprintf("log.cleaner.io.max.bytes.per.second=%d", ioRate),
		"log.cleaner.dedupe.buffer.size=4194304",
	}
}

// createCrashTopic creates topic compacted with 64 KiB segments.
func createCrashTopic(t *testing.T, addr, topic string) {
	t.Helper()
	adm, done := adminFor(t, addr)
	defer done()
	one := func(s string) *string { return &s }
	createCompacted(t, adm, topic, map[string]*string{"segment.bytes": one("65536")})
}

// partitionLogs lists the .log files of topic's partition 0 under dir.
func partitionLogs(t *testing.T, dir, topic string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 {
		t.Fatalf("no .log files in %s", filepath.Join(dir, topic+"-0"))
	}
	sort.Strings(logs)
	return logs
}

// checkDumpLog runs `sluice dump-log --deep` over every segment of topic's
// partition 0 (the broker must not be running: the cleaner renames files)
// and fails on any damage it reports.
func checkDumpLog(t *testing.T, dir, topic string) {
	t.Helper()
	logs := partitionLogs(t, dir, topic)
	out, stderr, err := run(t, 60*time.Second, "", sluiceBinary(t), append([]string{"dump-log", "--deep"}, logs...)...)
	if err != nil {
		t.Fatalf("dump-log: %v\n%s", err, stderr)
	}
	for _, l := range lines(out) {
		if strings.Contains(l, "isvalid: false") || strings.HasPrefix(l, "invalid batch") ||
			strings.HasPrefix(l, "Found ") || strings.HasPrefix(l, "records of batch") {
			t.Fatalf("dump-log reports damage in %s: %s", filepath.Join(dir, topic+"-0"), l)
		}
	}
}

// cleaningLeftovers lists the files of an interrupted cleaning (.cleaned,
// .swap) in topic's partition directory.
func cleaningLeftovers(t *testing.T, dir, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, topic+"-0"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
			out = append(out, e.Name())
		}
	}
	return out
}

// countRecoveries counts the log lines of a broker start that finished or
// rolled back an interrupted cleaning.
func countRecoveries(logs string) (completed, rolledBack int) {
	for _, l := range lines(logs) {
		switch {
		case strings.Contains(l, "segment: completing an interrupted cleaning"):
			completed++
		case strings.Contains(l, "segment: removing leftover") && strings.Contains(l, ".log.cleaned"):
			rolledBack++
		}
	}
	return completed, rolledBack
}

// ackedRecord is the latest acknowledged record of a key.
type ackedRecord struct {
	index  int   // crashValue(index)
	offset int64 // where the broker said it wrote it
}

// TestCompactionSurvivesSIGKILL: on the segment backend, a compacted topic
// with small segments and a cleaner that runs almost continuously; ten
// times, a producer writes keyed records (acks=all) while the cleaner
// runs, the broker is SIGKILLed at a random moment (every other time, the
// first moment after a random delay when a cleaning is under way) and
// restarted. After each restart every key holds its latest acknowledged
// value or one produced after it, offsets increase, the cleaned prefix
// holds each key once, and dump-log finds no damage in any segment. Kills
// that land in the middle of a cleaning (leftover .cleaned or .swap files)
// exercise the recovery that rolls such a cleaning back or completes it;
// the test reports how often that happened. The seed is printed;
// SLUICE_SEED replays one.
func TestCompactionSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	const (
		topic  = "kv"
		kills  = 10
		chunk  = 100 // records per ProduceSync
		budget = 60 * time.Second
	)
	seed := time.Now().UnixNano()
	if s := os.Getenv("SLUICE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SLUICE_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewSource(seed))

	began := time.Now()
	dir := filepath.Join(t.TempDir(), "data")
	// Throttled below what the producer writes (at most 2.4 MB/s; a
	// round reads its dirty segments twice): the cleaner is busy most of
	// the time, so a kill often finds a cleaning in progress.
	b := startBroker(t, dir, cleanerSets(800_000)...)
	createCrashTopic(t, b.addr, topic)

	acked := map[string]ackedRecord{} // the latest acknowledged record per key
	next := 0                         // the index of the next record
	var (
		allLogs                       strings.Builder // every broker process's log
		midCleaning, midCleaningAimed int             // kills with .cleaned or .swap files left
		completed, rolledBack         int
		ackedTotal                    int
	)
	for k := 1; k <= kills; k++ {
		// Keep the whole test within budget: later kills come sooner.
		left := budget - time.Since(began)
		if left < 5*time.Second {
			t.Logf("stopping after %d kills: %v spent", k-1, time.Since(began).Round(time.Millisecond))
			break
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic),
			kgo.ProducerLinger(time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		// The producer: one ProduceSync at a time, so the acknowledged
		// records of a key come in index order.
		ctx, cancel := context.WithCancel(context.Background())
		type ack struct {
			key string
			rec ackedRecord
		}
		var acks []ack // the producer's until wg.Wait returns
		first := next
		var wg sync.WaitGroup
		wg.Add(1)
		go func(first int) {
			defer wg.Done()
			for i := first; ctx.Err() == nil && i < first+2_000_000; i += chunk {
				recs := make([]*kgo.Record, chunk)
				for j := range recs {
					recs[j] = &kgo.Record{Key: []byte(crashKey(i + j)), Value: []byte(crashValue(i + j))}
				}
				res := cl.ProduceSync(ctx, recs...)
				if res.FirstErr() != nil {
					return // the broker is gone: nothing later is acknowledged
				}
				for j, r := range res {
					acks = append(acks, ack{crashKey(i + j), ackedRecord{i + j, r.Record.Offset}})
				}
				time.Sleep(5 * time.Millisecond) // at most 20,000 records (2.4 MB) a second
			}
		}(first)

		killFrom := time.Now()
		// Kill at a random moment, bounded. Every other kill is aimed:
		// after the delay it waits (1 s at most) until a cleaning has
		// written .cleaned files, and kills then, since a random
		// moment finds the cleaner between rounds more often than not.
		delay := time.Duration(300+rng.Intn(1700)) * time.Millisecond
		delay = min(delay, left/time.Duration(kills-k+1)/2)
		time.Sleep(delay)
		aimed := k%2 == 0
		if aimed {
			for wait := time.Now().Add(time.Second); time.Now().Before(wait); time.Sleep(time.Millisecond) {
				if len(cleaningLeftovers(t, dir, topic)) > 0 {
					break
				}
			}
		}
		allLogs.WriteString(b.logText())
		b.kill()
		leftovers := cleaningLeftovers(t, dir, topic)
		if len(leftovers) > 0 && aimed {
			midCleaningAimed++
		} else if len(leftovers) > 0 {
			midCleaning++
		}
		cancel()
		cl.Close() // fails what the killed broker did not answer
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			t.Fatalf("kill %d: the producer did not return within 30 s of the kill", k)
		}
		for _, a := range acks {
			acked[a.key] = a.rec // index order: the latest wins
		}
		n := len(acks)
		// Records from first up to the last one handed to the client
		// may be in the log; the next round starts past all of them.
		next = first + 2_000_000
		ackedTotal += n

		b.restart()
		logs := b.logText()
		c, r := countRecoveries(logs)
		completed, rolledBack = completed+c, rolledBack+r
		t.Logf("kill %d (aimed %v) after %v: %d records acknowledged; leftovers at the kill %v; on restart %d cleanings completed, %d rolled back",
			k, aimed, time.Since(killFrom).Round(time.Millisecond), n, leftovers, c, r)

		// Every acknowledged latest value, or a later one, is there.
		recs, end := readCompacted(t, b.addr, topic)
		_, latest := checkCompaction(t, recs, end)
		offsetOf := map[string]int64{}
		for _, rec := range recs {
			offsetOf[rec.key] = rec.offset
		}
		for key, a := range acked {
			v, ok := latest[key]
			if !ok {
				t.Fatalf("kill %d: key %s is gone; its latest acknowledged record is v%d at offset %d", k, key, a.index, a.offset)
			}
			if i := crashIndex(t, key, v); i < a.index || offsetOf[key] < a.offset {
				t.Fatalf("kill %d: key %s holds v%d at offset %d, older than its acknowledged v%d at offset %d",
					k, key, i, offsetOf[key], a.index, a.offset)
			}
		}
		for key, v := range latest {
			crashIndex(t, key, v) // nothing this test did not produce
		}

		// The files, after recovery, with the broker stopped so that
		// the cleaner renames nothing under dump-log.
		allLogs.WriteString(b.logText())
		if err := b.stop(); err != nil {
			t.Fatalf("kill %d: clean stop: %v", k, err)
		}
		checkDumpLog(t, dir, topic)
		b.restart()
	}
	allLogs.WriteString(b.logText())
	cleaned := strings.Count(allLogs.String(), "cleaner: cleaned log")
	t.Logf("%v: %d records acknowledged over %d keys; %d cleaning rounds; kills that found .cleaned/.swap files: %d of the random ones, %d of the aimed ones; "+
		"interrupted cleanings completed on restart: %d, rolled back: %d",
		time.Since(began).Round(time.Millisecond), ackedTotal, len(acked), cleaned, midCleaning, midCleaningAimed, completed, rolledBack)
	if cleaned == 0 {
		t.Fatal("the cleaner never cleaned the log: the kills tested nothing about compaction")
	}
}

// keptBatch returns the `sluice dump-log` line of the batch of producer
// pid that ends at offset last in topic's partition 0, failing when there
// is none or when it lies in the active (last) segment, which the cleaner
// never touches. The broker must be stopped.
func keptBatch(t *testing.T, dir, topic string, pid, last int64) string {
	t.Helper()
	logs := partitionLogs(t, dir, topic)
	out, stderr, err := run(t, 60*time.Second, "", sluiceBinary(t), append([]string{"dump-log"}, logs...)...)
	if err != nil {
		t.Fatalf("dump-log: %v\n%s", err, stderr)
	}
	file := ""
	for _, l := range lines(out) {
		if f, ok := strings.CutPrefix(l, "Dumping "); ok {
			file = f
		}
		if strings.Contains(l, fmt.Sprintf(" lastOffset: %d ", last)) && strings.Contains(l, fmt.Sprintf(" producerId: %d ", pid)) {
			if file == logs[len(logs)-1] {
				t.Fatalf("producer %d's last batch is in the active segment %s: the cleaner was not tested on it", pid, file)
			}
			return filepath.Base(file) + ": " + l
		}
	}
	t.Fatalf("no batch of producer %d ends at offset %d in %s: the cleaner dropped the producer's last batch", pid, last, filepath.Dir(logs[0]))
	return ""
}

// producerLog is a kgo.Logger that keeps what the client says about
// sequence numbers and producer ids: franz-go resolves some of those
// errors on its own (a new producer id, a duplicate treated as success),
// which a test of idempotence must see.
type producerLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *producerLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *producerLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	line := fmt.Sprint(append([]any{msg}, keyvals...)...)
	low := strings.ToLower(line)
	for _, s := range []string{"sequence", "failing the producer id", "data loss", "bumping producer epoch"} {
		if strings.Contains(low, s) {
			l.mu.Lock()
			l.msgs = append(l.msgs, line)
			l.mu.Unlock()
			return
		}
	}
}

func (l *producerLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// TestIdempotentProducerAcrossCleaning: one idempotent producer (acks=all,
// up to 5 requests in flight) writes to a compacted topic with small
// segments while the cleaner runs many rounds, and keeps writing across
// two clean restarts of the broker, which rebuilds the producer's state
// from a log whose batches the cleaner rewrote:
//
//  1. the producer writes while the cleaner runs;
//  2. it goes quiet while a second producer overwrites every key, until
//     the cleaner has cleaned past the first producer's last record: its
//     batches are cleaned away but for its last one, which the cleaner
//     keeps for the producer's state;
//  3. the broker restarts, the first producer resumes at its next
//     sequence;
//  4. the broker restarts again while the producer is writing: requests
//     in flight are retried against the restarted broker.
//
// No record fails and the client never meets a sequence error (it is told
// to stop on data loss, so OUT_OF_ORDER_SEQUENCE_NUMBER and
// UNKNOWN_PRODUCER_ID fail records instead of silently resetting the
// producer id; what it does say about sequences is caught from its log),
// and afterwards each key holds the last value produced for it, every
// offset was used once, offsets increase.
func TestIdempotentProducerAcrossCleaning(t *testing.T) {
	t.Parallel()
	const topic = "kv"
	began := time.Now()
	dir := filepath.Join(t.TempDir(), "data")
	// Faster than the producer writes (at most 2.4 MB/s): the cleaner
	// keeps up, so phase 2 is soon cleaned.
	b := startBroker(t, dir, cleanerSets(4_000_000)...)
	createCrashTopic(t, b.addr, topic)

	plog := &producerLog{}
	// Idempotent writes are kgo's default, with acks=all and 5 requests
	// in flight against Kafka >= 1.0 (MaxProduceRequestsInflightPerBroker
	// applies only without idempotence); acks said again here because the
	// test is about them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(2*time.Millisecond),
		kgo.ProducerBatchMaxBytes(16<<10), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.StopProducerOnDataLossDetected(), kgo.WithLogger(plog))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var (
		mu         sync.Mutex
		failures   []string
		pids       = map[int64]bool{} // producer ids in the acknowledgements
		acked      int
		lastOffset int64 = -1 // of the producer's acknowledged records
	)
	last := map[string]int{} // the last index produced per key (one partition: in order)
	produced := 0
	// produce runs the producer from index from, about 20,000 records a
	// second, until the returned stop is called; stop waits for every
	// record's outcome.
	produce := func(from int) (stop func()) {
		quit := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func(quit <-chan struct{}) {
			defer wg.Done()
			burst := -1 // the index the final burst ends at
			for i := from; i < from+1_000_000 && i != burst; i++ {
				select {
				case <-quit:
					// A last burst of 50 records without pauses: the
					// producer's last batch holds many records (their
					// sequences are what the cleaner must keep).
					burst, quit = i+50, nil
				default:
				}
				if i%100 == 99 && burst < 0 {
					time.Sleep(5 * time.Millisecond)
				}
				key := crashKey(i)
				last[key] = i
				produced++
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(crashValue(i))}, func(r *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if len(failures) < 10 {
							failures = append(failures, fmt.Sprintf("record v%d: %v", i, err))
						}
						return
					}
					acked++
					pids[r.ProducerID] = true
					lastOffset = max(lastOffset, r.Offset)
				})
			}
		}(quit)
		return func() {
			close(quit)
			wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
		}
	}
	// waitRounds waits for n cleaner rounds logged by the current broker
	// process, and 2 s, 15 s at most.
	waitRounds := func(phase string, n int) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(15 * time.Second)
		c := 0
		for time.Now().Before(deadline) {
			// Two seconds at least, so that the producer writes
			// through several rounds.
			if c = strings.Count(b.logText(), "cleaner: cleaned log"); c >= n && time.Since(start) > 2*time.Second {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		t.Logf("%s: %d cleaner rounds, %d records acknowledged, %v", phase, c, acked, time.Since(began).Round(time.Millisecond))
		mu.Unlock()
		if c < n {
			t.Fatalf("%s: %d cleaner rounds within 15 s, want %d", phase, c, n)
		}
	}
	restart := func() {
		t.Helper()
		if err := b.stop(); err != nil {
			t.Fatalf("clean stop: %v", err)
		}
		b.restart()
	}

	// 1.
	stop := produce(0)
	waitRounds("1. producing", 5)
	stop()

	// 2. Another producer overwrites every key many times over.
	other, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	quietAt := lastOffset
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 2_000_000; i < 2_000_000+30_000; i += 1000 {
		recs := make([]*kgo.Record, 1000)
		for j := range recs {
			recs[j] = &kgo.Record{Key: []byte(crashKey(i + j)), Value: []byte(crashValue(i + j))}
			last[crashKey(i+j)] = i + j
		}
		if err := other.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("other producer: %v", err)
		}
		produced += len(recs)
	}
	other.Close()
	deadline := time.Now().Add(15 * time.Second)
	x := int64(0)
	for time.Now().Before(deadline) {
		recs, end := readCompacted(t, b.addr, topic)
		if x, _ = checkCompaction(t, recs, end); x > quietAt {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("2. quiet: the producer's last record at offset %d; cleaned up to at least %d", quietAt, x)
	if x <= quietAt {
		t.Fatalf("2. the cleaner did not clean past offset %d within 15 s (reached %d)", quietAt, x)
	}

	// 3. The broker learns the producer from the cleaned log, which kept
	// the producer's last batch (seen here with the broker stopped).
	if err := b.stop(); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	mu.Lock()
	var pid int64 = -1
	for p := range pids {
		pid = p
	}
	mu.Unlock()
	kept := keptBatch(t, dir, topic, pid, quietAt)
	t.Logf("3. the producer's last batch, kept by the cleaner: %s", kept)
	b.restart()
	stop = produce(1_000_000)
	waitRounds("3. after a restart", 3)

	// 4. A restart with requests in flight.
	restart()
	waitRounds("4. after a restart while producing", 3)
	stop()

	mu.Lock()
	t.Logf("%d records produced, %d by the idempotent producer acknowledged under producer ids %v", produced, acked, pids)
	if len(failures) > 0 {
		t.Errorf("records failed:\n%s", strings.Join(failures, "\n"))
	}
	if len(pids) != 1 {
		t.Errorf("acknowledged under producer ids %v, want one: the producer was reset", pids)
	}
	mu.Unlock()
	if msgs := plog.messages(); len(msgs) > 0 {
		t.Errorf("the client met sequence or producer id trouble:\n%s", strings.Join(msgs, "\n"))
	}
	if t.Failed() {
		t.FailNow()
	}

	recs, end := readCompacted(t, b.addr, topic)
	_, latest := checkCompaction(t, recs, end)
	for key, i := range last {
		v, ok := latest[key]
		if !ok {
			t.Fatalf("key %s is gone; last produced v%d", key, i)
		}
		if got := crashIndex(t, key, v); got != i {
			t.Fatalf("key %s holds v%d, want the last produced v%d", key, got, i)
		}
	}
	if len(latest) != len(last) {
		t.Fatalf("%d keys read, %d produced", len(latest), len(last))
	}
	if int64(produced) != end {
		t.Fatalf("end offset %d, want %d: every record written once", end, produced)
	}
	t.Logf("%v: %d records, %d left after cleaning, end offset %d", time.Since(began).Round(time.Millisecond), produced, len(recs), end)
}
