// Command scale measures one `sluice serve` process as its partition count
// grows: it starts bin/sluice in a temporary directory with the
// chosen backend under a soft `ulimit -n` it sets itself, creates topics
// until the broker holds each step's partition count, and at each step
// produces to and fetches from random partitions, then records
//
//   - RSS per partition: VmRSS from /proc/PID/status minus the empty
//     broker's, divided by the partitions created;
//   - open fds (/proc/PID/fd entries) and mappings (/proc/PID/maps lines);
//   - Metadata for all topics: the median of --metadata-runs requests;
//   - CreateTopics: the median latency of one request creating one topic of
//     --partitions-per-topic partitions, and the step's total creation time.
//
// After the last step that succeeded it measures a clean stop (SIGTERM
// until exit), a restart (start until /readyz is 200 and Metadata lists
// every partition), and a restart after SIGKILL.
//
//	scale --backend pebble --steps 1000,10000,50000,100000 [--json out.jsonl]
//
// With --fill-mib, after the last step it instead produces that much data
// spread over every partition (acks=all), waits --fill-wait (so periodic
// flushes and checkpoints can run), SIGKILLs the broker and measures the
// restart ("restart_after_fill_kill": until /readyz and Metadata list every
// partition), the bytes the broker's recovery validated (summed from its
// "segment: recovered log" lines), and checks that every partition's end
// offset is at least what was acknowledged (nothing acknowledged lost):
//
//	scale --backend segment --steps 1000 --fill-mib 10240 \
//	  --set 'log.segment.bytes=1048576;log.flush.offset.checkpoint.interval.ms=-1'
//
// A step that fails (a CreateTopics error such as KAFKA_STORAGE_ERROR, the
// broker exiting, --step-timeout passing) is reported with the step and the
// error, and the run goes on to the stop and restart measurements at the
// count reached. It prints one JSON line per measurement on stdout (and
// --json) and a Markdown table at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type options struct {
	bin, backend string
	steps        []int
	perTopic     int
	topicsPerReq int
	nofile       uint64
	records      int
	fetchParts   int
	mdRuns       int
	stepTimeout  time.Duration
	keep         bool
	dir          string
	noRestart    bool
	sets         []string
	out          io.Writer
	fillMiB      int
	fillRecKiB   int
	fillWait     time.Duration
}

// row is one JSON line.
type row struct {
	Backend    string  `json:"backend"`
	Phase      string  `json:"phase"` // baseline, step, stop, restart, restart_after_kill
	Partitions int     `json:"partitions"`
	RSSKiB     int64   `json:"rss_kib,omitempty"`
	RSSPerPart float64 `json:"rss_per_partition_kib,omitempty"`
	FDs        int     `json:"fds,omitempty"`
	Maps       int     `json:"maps,omitempty"`
	MetadataMS float64 `json:"metadata_ms,omitempty"`
	MetadataKB int     `json:"metadata_kib,omitempty"`
	// MetadataRawMS is the broker's part: request written to last byte
	// read on a raw connection, no decoding (MetadataMS adds franz-go
	// decoding the response into structs).
	MetadataRawMS float64 `json:"metadata_raw_ms,omitempty"`
	CreateMS      float64 `json:"create_topics_ms,omitempty"`
	CreateAllS    float64 `json:"create_step_s,omitempty"`
	Produced      int     `json:"produced,omitempty"`
	Fetched       int     `json:"fetched,omitempty"`
	Seconds       float64 `json:"seconds,omitempty"`
	// GoHeapMiB is the broker's Go heap when RSS was read (the Go
	// collector's go_memstats_heap_alloc_bytes: live objects and garbage
	// not yet collected), GoHeapInuseMiB its spans in use, NextGCMiB the
	// heap size at which the next GC ends the cycle, GoHeapHeldMiB the
	// heap memory the runtime holds from the OS (heap_sys minus
	// heap_released: in use, or freed and not yet returned). RSS minus
	// GoHeapHeldMiB is memory outside the Go heap (Pebble's cache and
	// memtables under cgo, stacks, the binary).
	GoHeapMiB      float64 `json:"go_heap_mib,omitempty"`
	GoHeapInuseMiB float64 `json:"go_heap_inuse_mib,omitempty"`
	GoHeapHeldMiB  float64 `json:"go_heap_held_mib,omitempty"`
	NextGCMiB      float64 `json:"next_gc_mib,omitempty"`
	// FillMiB is what the fill phase produced; RecoveredMiB what the
	// restart after its SIGKILL validated.
	FillMiB float64 `json:"fill_mib,omitempty"`
	// CPUSeconds is the broker's utime+stime during a stop (SIGTERM to
	// exit) or a restart (start to ready): on a shared machine a steadier
	// figure than the wall time.
	CPUSeconds   float64 `json:"cpu_s,omitempty"`
	RecoveredMiB float64 `json:"recovered_mib,omitempty"`
	Error        string  `json:"error,omitempty"`
}

func main() {
	var o options
	var steps, sets, jsonPath string
	flag.StringVar(&o.bin, "bin", "bin/sluice", "the sluice binary")
	flag.StringVar(&o.backend, "backend", "pebble", "storage.backend: segment, pebble or memory")
	flag.StringVar(&steps, "steps", "1000,5000,10000,20000", "comma-separated partition counts")
	flag.IntVar(&o.perTopic, "partitions-per-topic", 100, "partitions of each created topic")
	flag.IntVar(&o.topicsPerReq, "topics-per-request", 50, "topics per CreateTopics request while growing")
	flag.Uint64Var(&o.nofile, "nofile", 20000, "soft RLIMIT_NOFILE of the broker (0: leave as is)")
	flag.IntVar(&o.records, "records", 2000, "records produced to random partitions at each step")
	flag.IntVar(&o.fetchParts, "fetch-partitions", 200, "random partitions fetched back at each step")
	flag.IntVar(&o.mdRuns, "metadata-runs", 7, "Metadata requests per measurement (the median is reported)")
	flag.DurationVar(&o.stepTimeout, "step-timeout", 10*time.Minute, "give up a step after this long")
	flag.BoolVar(&o.keep, "keep", false, "keep the data directory")
	flag.BoolVar(&o.noRestart, "no-restart", false, "end after the clean stop (with --keep: to profile a restart by hand)")
	flag.StringVar(&o.dir, "dir", "", "make the data directory under this one (default: the system temp dir)")
	flag.StringVar(&sets, "set", "", "extra broker settings, key=value;key=value")
	flag.StringVar(&jsonPath, "json", "", "also append the JSON lines to this file")
	flag.IntVar(&o.fillMiB, "fill-mib", 0, "after the steps, produce this many MiB over all partitions, SIGKILL, and time the restart (instead of the stop and restarts)")
	flag.IntVar(&o.fillRecKiB, "fill-record-kib", 16, "record size of --fill-mib")
	flag.DurationVar(&o.fillWait, "fill-wait", 10*time.Second, "wait between the end of --fill-mib and the SIGKILL")
	flag.Parse()
	for _, s := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf("--steps: %q is not a positive count", s)
		}
		// Partition i of the run is scale-<i/perTopic>, partition
		// i%perTopic (exercise, the fill): every topic must be full.
		if o.perTopic <= 0 || n%o.perTopic != 0 {
			fatalf("--steps: %d is not a multiple of --partitions-per-topic %d", n, o.perTopic)
		}
		o.steps = append(o.steps, n)
	}
	if sets != "" {
		o.sets = strings.Split(sets, ";")
	}
	o.out = os.Stdout
	if jsonPath != "" {
		f, err := os.OpenFile(jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		o.out = io.MultiWriter(os.Stdout, f)
	}
	if o.nofile > 0 {
		// Inherited by the broker. Go restores the limit it found for a
		// child only when the program never set one itself.
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fatalf("getrlimit: %v", err)
		}
		if lim.Max < o.nofile {
			fatalf("hard RLIMIT_NOFILE %d is below --nofile %d", lim.Max, o.nofile)
		}
		lim.Cur = o.nofile
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fatalf("setrlimit: %v", err)
		}
	}
	rows, err := run(o)
	fmt.Println()
	printTable(os.Stdout, o, rows)
	if err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...)
	os.Exit(1)
}

// broker is one running sluice process.
type broker struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	kafka    string
	httpAddr string
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func start(o options, dir string, kport, hport int) (*broker, error) {
	level := "warn"
	if o.fillMiB > 0 {
		level = "info" // the recovery's "recovered log" lines
	}
	args := []string{"serve", "-log-level", level,
		"-set", "log.dirs=" + filepath.Join(dir, "data"),
		"-set", "storage.backend=" + o.backend,
		"-set", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", kport),
		"-set", fmt.Sprintf("http.listeners=http://127.0.0.1:%d", hport),
		"-set", "auto.create.topics.enable=false",
	}
	for _, s := range o.sets {
		args = append(args, "-set", s)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "broker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	b := &broker{cmd: cmd, exited: make(chan struct{}),
		kafka: fmt.Sprintf("127.0.0.1:%d", kport), httpAddr: fmt.Sprintf("127.0.0.1:%d", hport)}
	go func() {
		b.waitErr = cmd.Wait()
		logf.Close()
		close(b.exited)
	}()
	return b, nil
}

func (b *broker) alive() error {
	select {
	case <-b.exited:
		return fmt.Errorf("broker exited: %v", b.waitErr)
	default:
		return nil
	}
}

// cpu returns the broker's utime+stime so far, in seconds: from
// /proc/PID/stat while it runs, from its rusage once it has exited.
func (b *broker) cpu() float64 {
	select {
	case <-b.exited:
		if st := b.cmd.ProcessState; st != nil {
			return (st.UserTime() + st.SystemTime()).Seconds()
		}
		return 0
	default:
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends the command name: utime and stime
	// are the 14th and 15th of the whole line.
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (ut + stime) / 100 // USER_HZ
}

// stop sends sig and waits for the exit, at most limit.
func (b *broker) stop(sig syscall.Signal, limit time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := b.cmd.Process.Signal(sig); err != nil {
		return 0, err
	}
	select {
	case <-b.exited:
		return time.Since(t0), nil
	case <-time.After(limit):
		b.cmd.Process.Kill()
		<-b.exited
		return time.Since(t0), fmt.Errorf("no exit %v after %v; killed", sig, limit)
	}
}

// ready waits until /readyz answers 200 and Metadata lists want
// partitions (in topics of our own), at most limit.
func (b *broker) ready(cl *kgo.Client, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		if err := b.alive(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
		resp, err := hc.Get("http://" + b.httpAddr + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			last = fmt.Errorf("/readyz: %s", resp.Status)
			continue
		}
		n, _, _, err := metadataAll(cl)
		if err != nil {
			last = err
			continue
		}
		if n < want {
			last = fmt.Errorf("metadata lists %d partitions, want %d", n, want)
			continue
		}
		return nil
	}
	return fmt.Errorf("not ready after %v: %v", limit, last)
}

// metadataAll asks for every topic and returns the partitions of scale
// topics with no error, the latency and the response.
func metadataAll(cl *kgo.Client) (int, time.Duration, *kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	t0 := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	d := time.Since(t0)
	if err != nil {
		return 0, d, nil, err
	}
	n := 0
	for _, t := range resp.Topics {
		if t.Topic == nil || !strings.HasPrefix(*t.Topic, "scale-") || t.ErrorCode != 0 {
			continue
		}
		n += len(t.Partitions)
	}
	return n, d, resp, nil
}

// metadataRaw times Metadata v12 for all topics on a connection of its
// own, from writing the request to reading the response's last byte, and
// returns the median of runs.
func metadataRaw(addr string, runs int) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12 // kmsg's zero value is v0; franz-go (metadataAll) negotiates v12
	req.Topics = nil
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("scale"))
	frame := f.AppendRequest(nil, req, 1)
	var ds []time.Duration
	var body []byte
	for i := 0; i < runs; i++ {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		t0 := time.Now()
		if _, err := c.Write(frame); err != nil {
			return 0, err
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return 0, err
		}
		n := int(uint32(size[0])<<24 | uint32(size[1])<<16 | uint32(size[2])<<8 | uint32(size[3]))
		if cap(body) < n {
			body = make([]byte, n)
		}
		if _, err := io.ReadFull(c, body[:n]); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	return median(ds), nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// procStats reads VmRSS (KiB), the fd count and the mapping count.
func procStats(pid int) (rss int64, fds, maps int, err error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	m, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	return rss, len(ents), strings.Count(string(m), "\n"), nil
}

// goHeap fills r's Go heap fields from the broker's /metrics (left zero
// when the scrape fails: the figures are informative).
func (b *broker) goHeap(r *row) {
	hc := http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + b.httpAddr + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	var sys, released float64
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "go_memstats_heap_alloc_bytes":
			r.GoHeapMiB = v / (1 << 20)
		case "go_memstats_heap_inuse_bytes":
			r.GoHeapInuseMiB = v / (1 << 20)
		case "go_memstats_next_gc_bytes":
			r.NextGCMiB = v / (1 << 20)
		case "go_memstats_heap_sys_bytes":
			sys = v
		case "go_memstats_heap_released_bytes":
			released = v
		}
	}
	r.GoHeapHeldMiB = (sys - released) / (1 << 20)
}

func emit(o options, rows *[]row, r row) {
	r.Backend = o.backend
	*rows = append(*rows, r)
	j, _ := json.Marshal(r)
	fmt.Fprintln(o.out, string(j))
}

func run(o options) ([]row, error) {
	dir, err := os.MkdirTemp(o.dir, "sluice-scale-")
	if err != nil {
		return nil, err
	}
	if o.fillMiB > 0 {
		// The disk may be shared: filling it stops everyone's work.
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if free := int64(st.Bavail) * st.Bsize; free < 3*int64(o.fillMiB)<<20 {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("--fill-mib %d: %d MiB free in %s, want 3x the fill", o.fillMiB, free>>20, dir)
		}
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "scale: data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	kport, err := freePort()
	if err != nil {
		return nil, err
	}
	hport, err := freePort()
	if err != nil {
		return nil, err
	}
	var rows []row
	b, err := start(o, dir, kport, hport)
	if err != nil {
		return nil, err
	}
	defer func() {
		if b.alive() == nil {
			b.stop(syscall.SIGKILL, 10*time.Second)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RequestTimeoutOverhead(60*time.Second),
		kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := b.ready(cl, 0, time.Minute); err != nil {
		return rows, fmt.Errorf("start: %w (log: %s)", err, filepath.Join(dir, "broker.log"))
	}
	time.Sleep(2 * time.Second) // let the empty broker settle
	baseRSS, fds, maps, err := procStats(b.cmd.Process.Pid)
	if err != nil {
		return rows, err
	}
	base := row{Phase: "baseline", RSSKiB: baseRSS, FDs: fds, Maps: maps}
	b.goHeap(&base)
	emit(o, &rows, base)

	created, topics := 0, 0
	for _, target := range o.steps {
		r := row{Phase: "step", Partitions: target}
		if err := growTo(o, adm, b, &created, &topics, target, &r); err != nil {
			// A failed request may have created some of its topics: count
			// what the broker holds, which the stop and restarts carry.
			if n, _, _, merr := metadataAll(cl); merr == nil && n > created {
				created = n
			}
			r.Partitions = created
			r.Error = fmt.Sprintf("growing to %d partitions: %v", target, err)
			emit(o, &rows, r)
			break
		}
		if err := exercise(o, cl, created, &r); err != nil {
			r.Error = err.Error()
		}
		if err := b.alive(); err != nil {
			r.Error = err.Error()
			emit(o, &rows, r)
			break
		}
		var mds []time.Duration
		for i := 0; i < o.mdRuns; i++ {
			n, d, resp, err := metadataAll(cl)
			if err == nil && n != created {
				err = fmt.Errorf("metadata lists %d partitions, want %d", n, created)
			}
			if err != nil {
				r.Error = "metadata: " + err.Error()
				break
			}
			if len(mds) == 0 {
				// Re-encoded once: ready's polls and the other runs
				// need no size.
				r.MetadataKB = len(resp.AppendTo(nil)) / 1024
			}
			mds = append(mds, d)
		}
		if len(mds) > 0 {
			r.MetadataMS = ms(median(mds))
		}
		if raw, err := metadataRaw(b.kafka, o.mdRuns); err != nil {
			r.Error = "raw metadata: " + err.Error()
		} else {
			r.MetadataRawMS = ms(raw)
		}
		r.RSSKiB, r.FDs, r.Maps, _ = procStats(b.cmd.Process.Pid)
		r.RSSPerPart = float64(r.RSSKiB-baseRSS) / float64(created)
		b.goHeap(&r)
		emit(o, &rows, r)
		if r.Error != "" {
			break
		}
	}
	if err := b.alive(); err != nil {
		return rows, err
	}
	if o.fillMiB > 0 {
		return fillKillRestart(o, dir, b, cl, created, kport, hport, baseRSS, rows)
	}

	// Clean stop, restart, SIGKILL, restart.
	cpu0 := b.cpu()
	d, err := b.stop(syscall.SIGTERM, 5*time.Minute)
	r := row{Phase: "stop", Partitions: created, Seconds: d.Seconds(), CPUSeconds: b.cpu() - cpu0}
	if err != nil {
		r.Error = err.Error()
	}
	emit(o, &rows, r)
	if o.noRestart {
		return rows, nil
	}
	for _, phase := range []string{"restart", "restart_after_kill"} {
		t0 := time.Now()
		b, err = start(o, dir, kport, hport)
		if err != nil {
			return rows, err
		}
		cl.PurgeTopicsFromClient()
		err = b.ready(cl, created, 5*time.Minute)
		r := row{Phase: phase, Partitions: created, Seconds: time.Since(t0).Seconds(), CPUSeconds: b.cpu()}
		if err != nil {
			r.Error = err.Error()
		}
		r.RSSKiB, r.FDs, r.Maps, _ = procStats(b.cmd.Process.Pid)
		b.goHeap(&r)
		if created > 0 {
			// After a restart nothing of the growth is left on the heap
			// or in Pebble's memtable: the steady cost of the partitions.
			r.RSSPerPart = float64(r.RSSKiB-baseRSS) / float64(created)
		}
		emit(o, &rows, r)
		if err != nil {
			return rows, err
		}
		if phase == "restart" {
			if _, err := b.stop(syscall.SIGKILL, time.Minute); err != nil {
				return rows, err
			}
		}
	}
	cpu0 = b.cpu()
	d, err = b.stop(syscall.SIGTERM, 5*time.Minute)
	r = row{Phase: "stop_after_recovery", Partitions: created, Seconds: d.Seconds(), CPUSeconds: b.cpu() - cpu0}
	if err != nil {
		r.Error = err.Error()
	}
	emit(o, &rows, r)
	return rows, nil
}

// growTo creates topics of o.perTopic partitions until *created reaches
// target (a multiple of o.perTopic), recording in r the median
// latency of a request and the total time.
func growTo(o options, adm *kadm.Client, b *broker, created, topics *int, target int, r *row) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.stepTimeout)
	defer cancel()
	t0 := time.Now()
	var single []time.Duration
	for *created < target {
		if err := b.alive(); err != nil {
			return err
		}
		// The first requests of a step create one topic each, timed alone.
		batch := o.topicsPerReq
		if len(single) < 5 {
			batch = 1
		}
		var names []string
		parts := o.perTopic
		for i := 0; i < batch && *created+len(names)*parts < target; i++ {
			names = append(names, fmt.Sprintf("scale-%06d", *topics+i))
		}
		t1 := time.Now()
		res, err := adm.CreateTopics(ctx, int32(parts), 1, nil, names...)
		if err != nil {
			return fmt.Errorf("CreateTopics: %w", err)
		}
		if len(names) == 1 {
			single = append(single, time.Since(t1))
		}
		for _, t := range res {
			if t.Err != nil && !errors.Is(t.Err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("CreateTopics %s: %w (%s)", t.Topic, t.Err, t.ErrMessage)
			}
		}
		*topics += len(names)
		*created += len(names) * parts
	}
	r.CreateAllS = time.Since(t0).Seconds()
	if len(single) > 0 {
		r.CreateMS = ms(median(single))
	}
	return nil
}

// exercise produces o.records records to random partitions and fetches
// o.fetchParts random partitions back from their start.
func exercise(o options, cl *kgo.Client, created int, r *row) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pick := func() (string, int32) {
		i := rand.IntN(created)
		return fmt.Sprintf("scale-%06d", i/o.perTopic), int32(i % o.perTopic)
	}
	counts := map[string]map[int32]int64{}
	var recs []*kgo.Record
	for i := 0; i < o.records; i++ {
		t, p := pick()
		recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte("scale-record-value-0123456789")})
		if counts[t] == nil {
			counts[t] = map[int32]int64{}
		}
		counts[t][p]++
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	r.Produced = len(recs)

	// Fetch from a consumer of its own: random partitions from the start,
	// produced-to ones first so something comes back.
	assign := map[string]map[int32]kgo.Offset{}
	n := 0
	for t, ps := range counts {
		for p := range ps {
			if n >= o.fetchParts/2 {
				break
			}
			if assign[t] == nil {
				assign[t] = map[int32]kgo.Offset{}
			}
			assign[t][p] = kgo.NewOffset().AtStart()
			n++
		}
	}
	for n < o.fetchParts {
		t, p := pick()
		if assign[t] == nil {
			assign[t] = map[int32]kgo.Offset{}
		}
		if _, ok := assign[t][p]; !ok {
			assign[t][p] = kgo.NewOffset().AtStart()
			n++
		}
	}
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(assign),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer cons.Close()
	got := map[string]map[int32]int64{}
	total := 0
	for total < wantTotal(counts, assign) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("fetch: %d of %d records after 2m", total, wantTotal(counts, assign))
		}
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if got[rec.Topic] == nil {
				got[rec.Topic] = map[int32]int64{}
			}
			got[rec.Topic][rec.Partition]++
			total++
		})
	}
	r.Fetched = total
	return nil
}

func wantTotal(counts map[string]map[int32]int64, assign map[string]map[int32]kgo.Offset) int {
	n := 0
	for t, ps := range assign {
		for p := range ps {
			n += int(counts[t][p])
		}
	}
	return n
}

func printTable(w io.Writer, o options, rows []row) {
	fmt.Fprintf(w, "| backend | phase | partitions | RSS MiB | RSS/partition KiB | fds | maps | Metadata all ms (KiB) | raw ms | CreateTopics ms | create step s | produced/fetched | seconds | CPU s | error |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|\n")
	for _, r := range rows {
		cell := func(ok bool, s string) string {
			if !ok {
				return ""
			}
			return s
		}
		phase := r.Phase
		if r.FillMiB > 0 {
			phase += fmt.Sprintf(" (%.0f MiB)", r.FillMiB)
		}
		if r.RecoveredMiB != 0 {
			phase += fmt.Sprintf(" (validated %.0f MiB)", r.RecoveredMiB)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Backend, phase, r.Partitions,
			cell(r.RSSKiB > 0, fmt.Sprintf("%.1f", float64(r.RSSKiB)/1024)),
			cell(r.RSSPerPart != 0, fmt.Sprintf("%.2f", r.RSSPerPart)),
			cell(r.FDs > 0, strconv.Itoa(r.FDs)), cell(r.Maps > 0, strconv.Itoa(r.Maps)),
			cell(r.MetadataMS > 0, fmt.Sprintf("%.1f (%d)", r.MetadataMS, r.MetadataKB)),
			cell(r.MetadataRawMS > 0, fmt.Sprintf("%.1f", r.MetadataRawMS)),
			cell(r.CreateMS > 0, fmt.Sprintf("%.1f", r.CreateMS)),
			cell(r.CreateAllS > 0, fmt.Sprintf("%.1f", r.CreateAllS)),
			cell(r.Produced > 0, fmt.Sprintf("%d/%d", r.Produced, r.Fetched)),
			cell(r.Seconds > 0, fmt.Sprintf("%.2f", r.Seconds)),
			cell(r.CPUSeconds > 0, fmt.Sprintf("%.2f", r.CPUSeconds)),
			strings.ReplaceAll(r.Error, "|", "/"))
	}
}

// fillKillRestart produces o.fillMiB MiB round-robin over every partition,
// waits o.fillWait, SIGKILLs the broker, restarts it and records the
// restart and what its recovery validated, then checks that no partition
// ends below what was acknowledged, and stops the broker cleanly.
func fillKillRestart(o options, dir string, b *broker, cl *kgo.Client, created, kport, hport int, baseRSS int64, rows []row) ([]row, error) {
	// Incompressible values, each a different window of a random pool, and
	// a producer of its own without compression: the bytes produced are
	// the bytes on disk.
	recSize := o.fillRecKiB << 10
	pool := make([]byte, 64<<20+recSize)
	rng := rand.NewChaCha8([32]byte{1})
	rng.Read(pool)
	n := (o.fillMiB << 20) / recSize
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(128<<10+1024), // below the small log.segment.bytes a fill run uses
		kgo.RequestTimeoutOverhead(60*time.Second))
	if err != nil {
		return rows, err
	}
	defer pcl.Close()
	acked := map[string]map[int32]int64{} // next offset acknowledged
	errs := make(chan error, 1)
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t0 := time.Now()
	var wg sync.WaitGroup
	// Runs of records per partition, so that batches fill (round-robin by
	// record made one-record batches over 1,000 partitions).
	run := max(1, (128<<10)/recSize)
	for i := 0; i < n; i++ {
		p := (i / run) % created
		off := (i * recSize) % (64 << 20)
		rec := &kgo.Record{Topic: fmt.Sprintf("scale-%06d", p/o.perTopic), Partition: int32(p % o.perTopic), Value: pool[off : off+recSize]}
		wg.Add(1)
		pcl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			mu.Lock()
			if acked[r.Topic] == nil {
				acked[r.Topic] = map[int32]int64{}
			}
			acked[r.Topic][r.Partition] = max(acked[r.Topic][r.Partition], r.Offset+1)
			mu.Unlock()
		})
	}
	wg.Wait()
	fr := row{Phase: "fill", Partitions: created, FillMiB: float64(n*recSize) / (1 << 20), Seconds: time.Since(t0).Seconds()}
	select {
	case err := <-errs:
		fr.Error = "produce: " + err.Error()
		emit(o, &rows, fr)
		return rows, err
	default:
	}
	emit(o, &rows, fr)
	time.Sleep(o.fillWait)
	if _, err := b.stop(syscall.SIGKILL, time.Minute); err != nil {
		return rows, err
	}
	logPath := filepath.Join(dir, "broker.log")
	before, _ := os.Stat(logPath)
	t1 := time.Now()
	b, err = start(o, dir, kport, hport)
	if err != nil {
		return rows, err
	}
	defer b.stop(syscall.SIGKILL, 10*time.Second)
	cl.PurgeTopicsFromClient()
	err = b.ready(cl, created, 30*time.Minute)
	r := row{Phase: "restart_after_fill_kill", Partitions: created, Seconds: time.Since(t1).Seconds(), CPUSeconds: b.cpu()}
	if err != nil {
		r.Error = err.Error()
	}
	r.RSSKiB, r.FDs, r.Maps, _ = procStats(b.cmd.Process.Pid)
	r.RSSPerPart = float64(r.RSSKiB-baseRSS) / float64(created)
	var from int64
	if before != nil {
		from = before.Size()
	}
	r.RecoveredMiB = float64(recoveredBytes(logPath, from)) / (1 << 20)
	if err == nil {
		if lost, lerr := lostOffsets(cl, acked); lerr != nil {
			r.Error = "end offsets: " + lerr.Error()
		} else if lost != "" {
			r.Error = "LOST acknowledged records: " + lost
		}
	}
	emit(o, &rows, r)
	if err != nil {
		return rows, err
	}
	cpu0 := b.cpu()
	d, err := b.stop(syscall.SIGTERM, 5*time.Minute)
	sr := row{Phase: "stop_after_recovery", Partitions: created, Seconds: d.Seconds(), CPUSeconds: b.cpu() - cpu0}
	if err != nil {
		sr.Error = err.Error()
	}
	emit(o, &rows, sr)
	return rows, nil
}

// recoveredBytes sums the bytes= of the "segment: recovered log" lines of
// the broker log from offset from on.
func recoveredBytes(path string, from int64) int64 {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < from {
		return -1
	}
	var total int64
	for _, line := range strings.Split(string(data[from:]), "\n") {
		if !strings.Contains(line, "segment: recovered log") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "bytes="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// lostOffsets lists the partitions whose end offset is below what was
// acknowledged ("" when none).
func lostOffsets(cl *kgo.Client, acked map[string]map[int32]int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var topics []string
	for t := range acked {
		topics = append(topics, t)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return "", err
	}
	var lost []string
	for t, ps := range acked {
		for p, want := range ps {
			got, ok := ends.Lookup(t, p)
			if !ok || got.Err != nil || got.Offset < want {
				lost = append(lost, fmt.Sprintf("%s-%d end %d < acked %d (%v)", t, p, got.Offset, want, got.Err))
			}
		}
	}
	slices.Sort(lost)
	if len(lost) > 5 {
		lost = append(lost[:5], fmt.Sprintf("and %d more", len(lost)-5))
	}
	return strings.Join(lost, "; "), nil
}
