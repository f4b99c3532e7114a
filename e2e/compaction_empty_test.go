package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/record"
)

// segmentFile is what one .log file of a partition directory holds.
type segmentFile struct {
	base    int64
	bytes   int64
	batches int
	empties int   // batches with recordCount 0 (kept for producer state)
	records int64 // records in all its batches
}

// readSegments parses every .log file of dir (a stopped broker's
// partition directory) in base order.
func readSegments(t *testing.T, dir string) []segmentFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []segmentFile
	for _, name := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		if err != nil {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := segmentFile{base: base, bytes: int64(len(data))}
		for pos := 0; pos < len(data); {
			size, ok := record.PeekSize(data[pos:])
			if !ok || size < record.HeaderSize || size > len(data)-pos {
				break // the active segment, being written
			}
			b := record.Batch(data[pos:])
			s.batches++
			s.records += int64(b.RecordCount())
			if b.RecordCount() == 0 {
				s.empties++
			}
			pos += size
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].base < out[j].base })
	return out
}

// kcatRead reads partition 0 of topic from the beginning to its end with
// kcat (librdkafka, which does not step over a fetch that returns only an
// empty batch), bounded by timeout, and returns the latest value per key
// and the number of records. A consumer stalled on an offset never sees
// the end and fails the test.
func kcatRead(t *testing.T, kcat, addr, topic string, timeout time.Duration) (map[string]string, int) {
	t.Helper()
	out, stderr, err := run(t, timeout, "", kcat, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
		"-f", "%o|%k|%s\n")
	if err != nil || strings.Contains(stderr, "ERROR") {
		t.Fatalf("kcat -C -o beginning -e did not read %s to its end within %v: %v\n%s", topic, timeout, err, stderr)
	}
	latest := map[string]string{}
	last := int64(-1)
	n := 0
	for _, l := range lines(out) {
		f := strings.SplitN(l, "|", 3)
		if len(f) != 3 {
			t.Fatalf("bad kcat line %q", l)
		}
		off, _ := strconv.ParseInt(f[0], 10, 64)
		if off <= last {
			t.Fatalf("kcat: offset %d after %d", off, last)
		}
		last = off
		latest[f[1]] = f[2]
		n++
	}
	return latest, n
}

// cleanerPoint reads partition 0 of topic's entry in the log dir's
// cleaner-offset-checkpoint (-1: none yet).
func cleanerPoint(t *testing.T, data, topic string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "cleaner-offset-checkpoint"))
	if err != nil {
		return -1
	}
	for _, l := range lines(string(b)) {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == topic && f[1] == "0" {
			off, _ := strconv.ParseInt(f[2], 10, 64)
			return off
		}
	}
	return -1
}

// produceRounds writes every key once per round, each round's values
// naming it, and records the latest value of each key in want.
func produceRounds(t *testing.T, cl *kgo.Client, topic string, first, rounds, keys int, want map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for r := first; r < first+rounds; r++ {
		recs := make([]*kgo.Record, 0, keys)
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("k%04d", (k*7919)%keys)
			val := fmt.Sprintf("r%d", r)
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(val)})
			want[key] = val
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// TestCompactionEmptyBatchesKcat reproduces issue 27's compaction stall: an
// idempotent producer over 2,000 keys on a compacted topic with 64 KiB
// segments and an eager cleaner. Each round used to keep the last batch of
// every group it rewrote as an empty batch, so a round over several dirty
// segments left as many 61-byte segments holding one empty batch each,
// and kcat (Debian's librdkafka 2.0.2) stopped for good at one of them
// ("Message at offset N might be too large to fetch"). Kafka keeps an
// empty batch only as a producer's last batch (or the last batch of a
// round) and merges small cleaned segments up to segment.bytes. So: kcat
// reads the topic to its end while the producer and the cleaner run, and
// again after, with every key's latest value; the log holds at most two
// empty batches (the producer's last and the last round's); and a round
// merges what earlier rounds left (about 32 KiB) into one segment.
func TestCompactionEmptyBatchesKcat(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	data := filepath.Join(t.TempDir(), "data")
	b := startBroker(t, data, "log.cleaner.backoff.ms=2000")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(1024),
		kgo.RecordPartitioner(kgo.ManualPartitioner())) // idempotent: franz-go's default
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, keys, rounds, segmentBytes = "kv", 2000, 40, 65536
	one := func(s string) *string { return &s }
	createCompacted(t, kadm.NewClient(cl), topic, map[string]*string{
		"segment.bytes": one(strconv.Itoa(segmentBytes)), "min.cleanable.dirty.ratio": one("0.01")})
	partDir := filepath.Join(data, topic+"-0")

	// The producer writes as fast as it can; kcat reads the topic to its
	// end meanwhile (at most 20 reads).
	want := map[string]string{}
	done := make(chan error, 1)
	go func() { done <- produceRounds(t, cl, topic, 0, rounds, keys, want) }()
	reads := 0
	var produceErr error
	for running := true; running; {
		select {
		case produceErr = <-done:
			running = false
		default:
		}
		if reads < 20 {
			kcatRead(t, kcat, b.addr, topic, 30*time.Second)
			reads++
		} else if running {
			produceErr, running = <-done, false
		}
	}
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	// The cleaner's last round: wait until its checkpoint reaches the
	// active segment (bounded).
	cp := cleanerPoint(t, data, topic)
	for i := 0; i < 120; i++ {
		segs := readSegments(t, partDir)
		if cp = cleanerPoint(t, data, topic); len(segs) > 0 && cp >= segs[len(segs)-1].base {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("kcat read the topic to its end %d times while producing; cleaner checkpoint %d", reads, cp)
	segs := readSegments(t, partDir)
	t.Logf("after producing: segments %s", describeSegments(segs))
	got, n := kcatRead(t, kcat, b.addr, topic, 30*time.Second)
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("kcat: key %s has %q, want %q", k, got[k], v)
		}
	}
	t.Logf("kcat read %d records", n)
	if e := countEmpties(segs); e > 2 {
		t.Errorf("%d empty batches in the log; Kafka keeps only the producer's last batch and the last round's", e)
	}

	// Two more rounds of writes: dirty enough for another cleaning,
	// which rewrites everything below cp, about 32 KiB in all, as one
	// segment (Kafka's groupSegmentsBySize) and drops the empty batch
	// that ended the previous round.
	if err := produceRounds(t, cl, topic, rounds, 3, keys, want); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120 && cleanerPoint(t, data, topic) <= cp; i++ {
		time.Sleep(500 * time.Millisecond)
	}
	if now := cleanerPoint(t, data, topic); now <= cp {
		t.Fatalf("no cleaning past offset %d within 60 s\n%s", cp, b.logText())
	}
	got, _ = kcatRead(t, kcat, b.addr, topic, 30*time.Second)
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("kcat: key %s has %q, want %q", k, got[k], v)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	segs = readSegments(t, partDir)
	t.Logf("after another round: segments %s", describeSegments(segs))
	if e := countEmpties(segs); e > 2 {
		t.Errorf("%d empty batches in the log; Kafka keeps only the producer's last batch and the last round's", e)
	}
	below := 0
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= cp {
			below++
		} else if s.base < cp {
			below++
		}
	}
	if below != 1 {
		t.Errorf("%d segments below offset %d, the previous rounds' output of about 32 KiB: want them merged into one", below, cp)
	}
}

func countEmpties(segs []segmentFile) int {
	n := 0
	for _, s := range segs {
		n += s.empties
	}
	return n
}

// describeSegments lists segs as base:bytes/batches/empty batches.
func describeSegments(segs []segmentFile) string {
	var list []string
	for _, s := range segs {
		list = append(list, fmt.Sprintf("%d:%dB/%db/%de", s.base, s.bytes, s.batches, s.empties))
	}
	return fmt.Sprintf("%d (base:bytes/batches/empty batches) %s", len(segs), strings.Join(list, " "))
}
