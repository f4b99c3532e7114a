package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readRSS reads a process's resident set size (VmRSS) from /proc.
func readRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// rssBytes is readRSS failing the test on an error.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	rss, err := readRSS(pid)
	if err != nil {
		t.Fatalf("read broker RSS: %v", err)
	}
	return rss
}

// TestSlowLorisMemoryBounded: 2,000 connections each announce a 100 MiB
// request and trickle its body, more than enough together to fill
// queued.max.request.bytes. The broker process's RSS stays within the
// fixed cost of the idle connections (measured first) plus twice the pool
// plus an allowance; a franz-go producer on another connection keeps
// producing without an error (its latency is logged, not asserted), and
// every slow connection is closed once request.read.timeout.ms passes.
// Its requests (1 KiB records, one per request) are small frames, which
// the pool's reserve serves while the large ones fill the rest.
//
// Why twice the pool: the pool bounds the frame bytes connections hold
// (live heap). Around them the Go runtime keeps what it has not yet
// collected or returned to the OS: with GOGC=100 the heap grows to twice
// its live size before a collection, and when 2,000 frames grow in
// lockstep each leaves its smaller buffers (together less than its
// current one) in the class pools until the GC trims them. A run with
// GODEBUG=gctrace=1 showed 140 MB live and a 178 MB heap goal at the peak
// for a 100 MiB pool (no reserve). The allowance covers goroutine stacks that grow
// when 2,000 readers wake at once, the good producer's requests, and
// runtime metadata.
func TestSlowLorisMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 connections and a 100 MiB pool: not in -short")
	}
	const (
		conns       = 2000
		announced   = 100 << 20 // each slow connection's size prefix
		pool        = 128 << 20 // queued.max.request.bytes (>= socket.request.max.bytes; reserve 16 MiB)
		readTimeout = 3 * time.Second
		chunk       = 4 << 10                // bytes a slow connection sends ...
		every       = 100 * time.Millisecond // ... this often: 80 MB/s together
		allowance   = 48 << 20
	)
	b := startBroker(t, t.TempDir(),
		"socket.request.max.bytes="+strconv.Itoa(announced),
		"queued.max.request.bytes="+strconv.Itoa(pool),
		"request.read.timeout.ms="+strconv.FormatInt(readTimeout.Milliseconds(), 10),
		"auto.create.topics.enable=true")
	pid := b.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The good producer: warm up (connection, metadata, producer id, topic).
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("good"),
		kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatalf("warm-up produce: %v", err)
	}

	// Open the slow connections, idle for now, and measure what they cost.
	slow := dialConns(t, b.addr, conns)
	time.Sleep(500 * time.Millisecond) // let the broker start every reader
	idleRSS := rssBytes(t, pid)
	t.Logf("broker RSS with %d idle connections: %d MiB", conns, idleRSS>>20)

	// Sample RSS until the end.
	var maxRSS atomic.Int64
	sampleDone := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampleDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			rss, err := readRSS(pid)
			if err != nil {
				return // the broker exited; the test reports that
			}
			if rss > maxRSS.Load() {
				maxRSS.Store(rss)
			}
		}
	}()

	// The good producer runs until the slow connections are gone.
	var (
		latencies []time.Duration
		prodErr   error
		prodWG    sync.WaitGroup
		stopProd  = make(chan struct{})
	)
	prodWG.Add(1)
	go func() {
		defer prodWG.Done()
		for i := 0; i < 100_000; i++ {
			select {
			case <-stopProd:
				return
			default:
			}
			start := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				prodErr = fmt.Errorf("record %d: %w", i, err)
				return
			}
			latencies = append(latencies, time.Since(start))
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// The attack: every connection announces 100 MiB and trickles.
	attackStart := time.Now()
	closedAfter := make([]time.Duration, conns) // 0: not closed by the broker
	var wg sync.WaitGroup
	for i, c := range slow {
		wg.Add(2)
		go func() { // writer: prefix, then chunk every interval, for at most 20 s
			defer wg.Done()
			buf := make([]byte, 4+chunk)
			binary.BigEndian.PutUint32(buf, announced)
			out := buf // the first write carries the prefix
			for range int(20 * time.Second / every) {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(out); err != nil && !isTimeout(err) {
					return // closed by the broker
				}
				out = buf[4:]
				time.Sleep(every)
			}
		}()
		go func() { // reader: the broker never answers; EOF or reset is the close
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			var one [1]byte
			if _, err := c.Read(one[:]); err != nil && !isTimeout(err) {
				closedAfter[i] = time.Since(attackStart)
			}
			c.Close() // stops the writer
		}()
	}
	wg.Wait()
	close(stopProd)
	prodWG.Wait()
	close(stopSampling)
	<-sampleDone

	if prodErr != nil {
		t.Errorf("good producer failed during the attack: %v", prodErr)
	}
	slices.Sort(latencies)
	if n := len(latencies); n > 0 {
		t.Logf("good producer: %d records during the attack, latency p50 %v p99 %v max %v",
			n, latencies[n/2], latencies[n*99/100], latencies[n-1])
	} else {
		t.Errorf("good producer produced nothing during the attack")
	}
	open, latest := 0, time.Duration(0)
	for _, d := range closedAfter {
		if d == 0 {
			open++
		}
		latest = max(latest, d)
	}
	if open > 0 {
		t.Errorf("%d of %d slow connections were not closed by the broker within 30 s", open, conns)
	}
	t.Logf("slow connections closed by the broker: %d of %d, the last %v after the attack began (request.read.timeout.ms %v)",
		conns-open, conns, latest.Round(time.Millisecond), readTimeout)
	peak := maxRSS.Load()
	limit := idleRSS + 2*pool + allowance
	t.Logf("broker RSS peak %d MiB = idle %d MiB + %d MiB; limit idle + 2 x queued.max.request.bytes %d MiB + allowance %d MiB = %d MiB",
		peak>>20, idleRSS>>20, (peak-idleRSS)>>20, pool>>20, allowance>>20, limit>>20)
	if peak > limit {
		t.Errorf("broker RSS peaked at %d MiB, above %d MiB", peak>>20, limit>>20)
	}
	// The broker still serves after the attack.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatalf("produce after the attack: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// dialConns opens n connections to addr, closed when the test ends.
func dialConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	cs := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial connection %d: %v", len(cs), err)
		}
		cs = append(cs, c)
	}
	return cs
}
