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
