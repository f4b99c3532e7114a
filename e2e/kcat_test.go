package e2e

import (
	"bufio"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKcatCodecs produces 10k keyed messages with headers through kcat in
// every compression codec, consumes them back with -e, and checks every key,
// value and header, and per-partition order; then lists metadata with -L.
func TestKcatCodecs(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	b := startBroker(t, t.TempDir(), "num.partitions=3")
	const n = 10000
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "key-%05d:value-%05d\n", i, i)
	}
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run("codec="+codec, func(t *testing.T) {
			topic := "kcat-" + codec
			_, stderr, err := run(t, 60*time.Second, in.String(), kcat, "-P", "-b", b.addr, "-t", topic,
				"-K:", "-z", codec, "-H", "source=kcat", "-H", "codec="+codec, "-X", "acks=all")
			if err != nil {
				t.Fatalf("kcat -P: %v\n%s\nbroker log:\n%s", err, stderr, b.logText())
			}
			out, stderr, err := run(t, 60*time.Second, "", kcat, "-C", "-b", b.addr, "-t", topic, "-e", "-q",
				"-o", "beginning", "-f", "%p|%o|%k|%s|%h\n")
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, stderr)
			}
			seen := map[string]bool{}
			lastOffset := map[string]int64{}
			for _, l := range lines(out) {
				f := strings.Split(l, "|")
				if len(f) != 5 {
					t.Fatalf("bad line %q", l)
				}
				part, key, val, hdrs := f[0], f[2], f[3], f[4]
				off, _ := strconv.ParseInt(f[1], 10, 64)
				if prev, ok := lastOffset[part]; ok && off <= prev {
					t.Fatalf("partition %s: offset %d after %d", part, off, prev)
				}
				lastOffset[part] = off
				if strings.TrimPrefix(key, "key-") != strings.TrimPrefix(val, "value-") {
					t.Fatalf("key %q with value %q", key, val)
				}
				if hdrs != "source=kcat,codec="+codec {
					t.Fatalf("headers %q", hdrs)
				}
				if seen[key] {
					t.Fatalf("key %s consumed twice", key)
				}
				seen[key] = true
			}
			if len(seen) != n {
				t.Fatalf("consumed %d distinct messages, want %d", len(seen), n)
			}
			if len(lastOffset) != 3 {
				t.Errorf("keys landed in %d partitions, want 3", len(lastOffset))
			}
		})
	}
	t.Run("metadata", func(t *testing.T) {
		out, stderr, err := run(t, 30*time.Second, "", kcat, "-L", "-b", b.addr)
		if err != nil {
			t.Fatalf("kcat -L: %v\n%s", err, stderr)
		}
		for _, want := range []string{"1 brokers:", "broker 0 at " + b.addr, `topic "kcat-zstd" with 3 partitions:`,
			"partition 0, leader 0, replicas: 0, isrs: 0"} {
			if !strings.Contains(out, want) {
				t.Errorf("kcat -L output lacks %q:\n%s", want, out)
			}
		}
	})
}

var deliveredRE = regexp.MustCompile(`Message delivered to partition (\d+) \(offset (-?\d+)\)`)

// TestKcatSIGKILL produces through kcat while the broker is SIGKILLed, then
// restarts the broker and checks that every message kcat saw acknowledged
// (acks=all) is there, at the offset it was acknowledged with.
func TestKcatSIGKILL(t *testing.T) {
	t.Parallel()
	kcat := need(t, "kcat")
	dir := t.TempDir()
	b := startBroker(t, dir)
	topic := "kill-me"
	// -vv makes kcat print a delivery report per acknowledged message.
	cmd := exec.Command(kcat, "-P", "-vv", "-b", b.addr, "-t", topic, "-p", "0", "-X", "acks=all",
		"-X", "linger.ms=2", "-X", "message.timeout.ms=5000")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	acked := make(chan int64, 1<<20)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := deliveredRE.FindStringSubmatch(sc.Text()); m != nil {
				off, _ := strconv.ParseInt(m[2], 10, 64)
				acked <- off
			}
		}
	}()
	stopFeed := make(chan struct{})
	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		w := bufio.NewWriter(stdin)
		for i := 0; i < 500000; i++ {
			select {
			case <-stopFeed:
				w.Flush()
				return
			default:
			}
			fmt.Fprintf(w, "msg-%07d\n", i)
			if i%100 == 99 {
				if w.Flush() != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		w.Flush()
	}()

	// Wait for a good number of acknowledgements, then kill the broker mid-stream.
	var offsets []int64
	deadline := time.After(60 * time.Second)
	for len(offsets) < 20000 {
		select {
		case o := <-acked:
			offsets = append(offsets, o)
		case <-deadline:
			t.Fatalf("only %d acknowledgements within 60s\n%s", len(offsets), b.logText())
		}
	}
	b.kill()
	close(stopFeed)
	<-feedDone
	stdin.Close()
	// Give kcat a moment to report whatever was acknowledged before the
	// kill, then stop it: nothing more can be acknowledged with the broker down.
	time.Sleep(2 * time.Second)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	<-readDone
	close(acked)
	for o := range acked {
		offsets = append(offsets, o)
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	t.Logf("kcat saw %d messages acknowledged before and around the SIGKILL (max offset %d)", len(offsets), offsets[len(offsets)-1])

	b.restart()
	out, errOut, err := run(t, 60*time.Second, "", kcat, "-C", "-b", b.addr, "-t", topic, "-p", "0", "-e", "-q",
		"-o", "beginning", "-f", "%o|%s\n")
	if err != nil {
		t.Fatalf("kcat -C after restart: %v\n%s\n%s", err, errOut, b.logText())
	}
	present := map[int64]string{}
	for _, l := range lines(out) {
		o, v, _ := strings.Cut(l, "|")
		off, _ := strconv.ParseInt(o, 10, 64)
		present[off] = v
	}
	for _, o := range offsets {
		v, ok := present[o]
		if !ok {
			t.Fatalf("acknowledged offset %d lost after SIGKILL and restart (log has %d records)", o, len(present))
		}
		if !strings.HasPrefix(v, "msg-") {
			t.Fatalf("offset %d holds %q", o, v)
		}
	}
	// The broker logged its recovery of the unclean shutdown.
	if !strings.Contains(b.logText(), "segment: recovered log") {
		t.Errorf("broker log after the unclean restart does not report recovery:\n%s", b.logText())
	}
	if err := b.stop(); err != nil {
		t.Fatalf("clean stop after restart: %v", err)
	}
}
