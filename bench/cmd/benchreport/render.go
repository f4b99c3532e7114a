package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice/sluice/bench/floor"
)

// renderOpts are render's flags.
type renderOpts struct {
	results, svg, svgRef       string
	date, commit, machine      string
	loadStart, loadEnd, params string
	profiles, extra            string
	replResults                string
	dd4g                       float64
}

// stat is the median and range of one figure over a group's runs.
type stat struct {
	med, min, max float64
	n             int
}

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

// group is the runs of one workload on one broker.
type group struct {
	runs   []record // successful runs
	failed int
}

func (g *group) stat(f func(r record) float64) stat {
	v := make([]float64, 0, len(g.runs))
	for _, r := range g.runs {
		v = append(v, f(r))
	}
	return statOf(v)
}

func (g *group) mbps() stat { return g.stat(func(r record) float64 { return r.Result.MBPerSec }) }

// cpuPerGB is CPU seconds per 10^9 bytes moved.
func cpuPerGB(cpu float64, r record) float64 {
	if r.Result.Bytes == 0 {
		return 0
	}
	return cpu / (float64(r.Result.Bytes) / 1e9)
}

// median of the per-run figures.
func (g *group) brokerPerGB() float64 {
	return g.stat(func(r record) float64 { return cpuPerGB(r.BrokerCPU, r) }).med
}
func (g *group) brokerPct() float64 {
	return g.stat(func(r record) float64 { return 100 * r.BrokerCPU / r.Wall }).med
}
func (g *group) clientPct() float64 {
	return g.stat(func(r record) float64 { return 100 * r.ClientCPU / r.Wall }).med
}

// boundBy names the side that used (nearly) its whole core.
func (g *group) boundBy() string {
	c, b := g.clientPct(), g.brokerPct()
	switch {
	case c >= 85 && c >= b:
		return "client"
	case b >= 85:
		return "broker"
	default:
		return "round trips"
	}
}

// key names a workload on a broker.
func key(tags map[string]string, fields ...string) string {
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%s=%s ", f, tags[f])
	}
	return b.String()
}

type data struct {
	limits map[string]stat
	floors map[string]floorStat // by bench/floor mode
	groups map[string]*group    // by key(tags, all tag names in a fixed order)
	brs    []string             // brokers in the order they were run
	dd4g   float64              // the storage section's 4 GiB dd MB/s, 0 if unknown
}

// floorStat is one bench/floor mode over the runs.
type floorStat struct{ mbps, cpuPerGB stat }

var tagOrder = []string{"broker", "workload", "size", "producers", "acks"}

func (d *data) get(tags ...string) *group {
	m := map[string]string{}
	for i := 0; i+1 < len(tags); i += 2 {
		m[tags[i]] = tags[i+1]
	}
	return d.groups[key(m, tagOrder...)]
}

func load(path string) (*data, error) {
	recs, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	d := &data{limits: map[string]stat{}, floors: map[string]floorStat{}, groups: map[string]*group{}}
	lim := map[string][]float64{}
	floorMB, floorCPU := map[string][]float64{}, map[string][]float64{}
	for _, r := range recs {
		switch r.Kind {
		case "limit":
			lim[r.Name] = append(lim[r.Name], r.MBps)
		case "floor":
			floorMB[r.Name] = append(floorMB[r.Name], r.MBps)
			floorCPU[r.Name] = append(floorCPU[r.Name], r.CPUPerGB)
		case "run":
			k := key(r.Tags, tagOrder...)
			g := d.groups[k]
			if g == nil {
				g = &group{}
				d.groups[k] = g
			}
			if !slices.Contains(d.brs, r.Tags["broker"]) {
				d.brs = append(d.brs, r.Tags["broker"])
			}
			if r.Exit == 0 && r.Result != nil && r.Result.Errors == 0 && r.Result.Records > 0 {
				g.runs = append(g.runs, r)
			} else {
				g.failed++
			}
		}
	}
	for k, v := range lim {
		d.limits[k] = statOf(v)
	}
	for k, v := range floorMB {
		d.floors[k] = floorStat{mbps: statOf(v), cpuPerGB: statOf(floorCPU[k])}
	}
	return d, nil
}

func render(args []string) error {
	var o renderOpts
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.StringVar(&o.results, "results", "", "results file (required)")
	fs.StringVar(&o.svg, "svg", "", "write the chart here (required)")
	fs.StringVar(&o.svgRef, "svg-ref", "docs/bench.svg", "the chart's path as the report links it")
	fs.StringVar(&o.date, "date", "", "when the run started")
	fs.StringVar(&o.commit, "commit", "", "commit measured")
	fs.StringVar(&o.machine, "machine", "", "machine description")
	fs.StringVar(&o.loadStart, "load-start", "", "load average at start")
	fs.StringVar(&o.loadEnd, "load-end", "", "load average at end")
	fs.StringVar(&o.params, "params", "", "the run's parameters")
	fs.StringVar(&o.profiles, "profiles", "", "directory of pprof -top outputs")
	fs.Float64Var(&o.dd4g, "dd4g", 0, "the storage section's 4 GiB dd MB/s (0: unknown)")
	fs.StringVar(&o.extra, "extra", "", "a markdown file (the replicated produce section) included after the latency table")
	fs.StringVar(&o.replResults, "repl-results", "", "scripts/bench-replication.sh's JSON lines, for the targets table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.results == "" || o.svg == "" {
		return fmt.Errorf("need -results and -svg")
	}
	d, err := load(o.results)
	if err != nil {
		return err
	}
	d.dd4g = o.dd4g
	if err := writeChart(o.svg, d); err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	writeReport(w, d, &o)
	return w.Flush()
}

func pct(a, b float64) string {
	if b <= 0 || a <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

func ratio(a, b float64) string {
	if b <= 0 || a <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func mbCell(s stat, want int) string {
	if s.n == 0 {
		return "failed"
	}
	c := fmt.Sprintf("%.0f (%.0f–%.0f)", s.med, s.min, s.max)
	if s.n < want {
		c += fmt.Sprintf(" [%d runs]", s.n)
	}
	return c
}

func sizeName(s string) string {
	switch s {
	case "1024":
		return "1 KiB"
	case "100":
		return "100 B†"
	}
	return s
}

func writeReport(w io.Writer, d *data, o *renderOpts) {
	runs := 0
	for _, g := range d.groups {
		runs = max(runs, len(g.runs)+g.failed)
	}
	dd, sf, tcp := d.limits["dd"], d.limits["sendfile"], d.limits["tcp"]
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }

	p("## Loopback produce/consume report (`make bench-report`)\n\n")
	p("Generated by `scripts/bench-report.sh` (`make bench-report`); do not edit between the\n")
	p("markers, re-run it. Run of %s, commit `%s`; machine: %s. Load average (1/5/15 min)\n", o.date, o.commit, o.machine)
	p("**%s** at the start and **%s** at the end (a shared machine: other engineers'\n", o.loadStart, o.loadEnd)
	p("builds and tests were running; every figure is a median of %d runs, min–max beside it).\n", runs)
	p("Parameters: `%s`. Raw results, one JSON line per run: `%s`.\n\n", o.params,
		path.Join(path.Dir(o.svgRef), "bench-results.jsonl"))

	p("How: the broker (`sluice serve --set storage.backend=B`, or `kfakeserve --data-dir`,\n")
	p("franz-go's kfake with its persistence on) runs pinned to CPU 0 (`taskset -c 0`), the load\n")
	p("generator `sluice perf ... --json` pinned to CPU 1; all brokers are up at once and every\n")
	p("round runs each workload on each broker back to back, so outside load hits them alike.\n")
	p("One partition, compression off, linger 5 ms (e2e: 0), franz-go's defaults otherwise;\n")
	p("MB = 10^6 B of keys+values. Broker CPU is utime+stime from /proc/PID/stat around the run,\n")
	p("client CPU the load generator's rusage; \"CPU %%\" is of one core over the run's wall time.\n")
	p("\"bound\" names the side at >= 85%% of its core; \"round trips\" when neither is: the client\n")
	p("waits for answers. With acks=1 franz-go turns idempotence off and then sends one produce\n")
	p("request at a time per broker (MaxProduceRequestsInflightPerBroker defaults to 1), so client\n")
	p("and broker take turns and their CPU adds up to about one core; acks=all (idempotent)\n")
	p("keeps up to 5 in flight. †100 B rows are client-bound by design (franz-go's per-record\n")
	p("work dominates); read them for the broker's CPU per GB, not for its throughput.\n\n")
	p("Warm-up: before anything is measured, WARM_MB of memory is written to /dev/shm and freed.\n")
	p("This machine is a VM whose memory the host backs on first touch: on a fresh VM three\n")
	p("successive 1 GiB dd runs gave 272, 924 and 3800 MB/s, so without it whichever broker\n")
	p("ran first would pay for the VM's page faults. It helps only the first runs: the VM\n")
	p("hands freed memory back to the host within seconds (free page reporting), so every run\n")
	p("that writes fresh page cache may pay again; \"The floor\" below samples the floor beside\n")
	p("the brokers for that reason.\n\n")

	p("### Limits of this machine\n\n")
	p("| limit | MB/s median (min–max) |\n|---|---|\n")
	p("| dd if=/dev/zero bs=1M count=1024 (1 GiB: page cache, under the dirty limit) | %s |\n", mbCell(dd, runs))
	if o.dd4g > 0 {
		p("| dd bs=1M count=4096 (4 GiB: writeback-bound; from the storage section above, not this run) | %.0f |\n", o.dd4g)
	}
	p("| page-cache file → sendfile(2) → loopback TCP → discarding reader | %s |\n", mbCell(sf, runs))
	p("| memory → write(2) → loopback TCP → discarding reader | %s |\n\n", mbCell(tcp, runs))

	writeFloor(w, d, runs)

	p("### Produce\n\n")
	p("`sluice perf produce --records N --record-size S --producers P --acks A`; \"vs dd\" is against\n")
	p("the 1 GiB dd median.\n\n")
	p("| size | producers | acks | broker | MB/s median (min–max) | records/s | vs kfake | vs dd | broker CPU s/GB | broker CPU | client CPU | bound |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, size := range []string{"1024", "100"} {
		for _, prod := range []string{"1", "4"} {
			for _, acks := range []string{"1", "all"} {
				kf := d.get("broker", "kfake", "workload", "produce", "size", size, "producers", prod, "acks", acks)
				for _, b := range d.brs {
					g := d.get("broker", b, "workload", "produce", "size", size, "producers", prod, "acks", acks)
					if g == nil {
						continue
					}
					writeRow(w, g, kf, runs, dd.med, sizeName(size), prod, acks, b)
				}
			}
		}
	}

	p("\n### Consume from the start\n\n")
	p("`sluice perf consume` reads the topic the `producers=1 acks=1` produce run just wrote,\n")
	p("from offset 0 to the high watermark (one consumer, no group); \"vs limit\" is against\n")
	p("sendfile → TCP.\n\n")
	p("| size | broker | MB/s median (min–max) | records/s | vs kfake | vs limit | broker CPU s/GB | broker CPU | client CPU | bound |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, size := range []string{"1024", "100"} {
		kf := d.get("broker", "kfake", "workload", "consume", "size", size)
		for _, b := range d.brs {
			g := d.get("broker", b, "workload", "consume", "size", size)
			if g == nil {
				continue
			}
			writeRow(w, g, kf, runs, sf.med, sizeName(size), "", "", b)
		}
	}

	p("\n### End-to-end latency\n\n")
	p("`sluice perf e2e --record-size 1024 --target-rate R --linger 0` (acks=all): produce time\n")
	p("stamped in the record, latency measured at the consumer. Figures from the run with the\n")
	p("median p99; p99 min–max over runs.\n\n")
	p("| broker | records/s | e2e p50 / p99 / p99.9 / max ms | e2e p99 min–max | produce p50 / p99 ms | broker CPU | client CPU |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, b := range d.brs {
		g := d.get("broker", b, "workload", "e2e", "size", "1024")
		if g == nil || len(g.runs) == 0 {
			p("| %s | failed | | | | | |\n", b)
			continue
		}
		r := medianRun(g, func(r record) float64 { return e2eP99(r) })
		p99 := g.stat(e2eP99)
		e, pl := r.Result.E2E, r.Result.Produce
		if e == nil || pl == nil {
			p("| %s | no latency | | | | | |\n", b)
			continue
		}
		p("| %s | %.0f | %.2f / %.2f / %.2f / %.2f | %.2f–%.2f | %.2f / %.2f | %.0f%% | %.0f%% |\n",
			b, r.Result.RecordsPerSec, e.P50, e.P99, e.P999, e.Max, p99.min, p99.max, pl.P50, pl.P99,
			g.brokerPct(), g.clientPct())
	}

	replicated := false
	if o.extra != "" {
		if b, err := os.ReadFile(o.extra); err == nil {
			p("\n")
			w.Write(b)
			replicated = true
		} else {
			p("\n(replicated produce: %v)\n", err)
		}
	}

	var repl []replRatio
	if replicated && o.replResults != "" {
		var err error
		if repl, err = loadReplication(o.replResults); err != nil {
			p("\n(replicated produce results: %v)\n", err)
		}
	}
	writeTargets(w, d, dd, sf, replicated, repl)

	p("\n### Chart\n\n")
	p("![Throughput vs record size per broker, with the machine's limits](%s)\n\n", o.svgRef)
	p("Log scale. Left: produce with 1 producer and acks=all (franz-go's defaults: idempotent,\n")
	p("up to 5 requests in flight; the Produce table has the other configurations); right:\n")
	p("consume from the start. Points are medians, whiskers min–max; dashed lines are the limits\n")
	p("(all from this run except dd 4 GiB).\n")

	if o.profiles != "" {
		writeProfiles(w, o.profiles)
	}
}

func e2eP99(r record) float64 {
	if r.Result.E2E == nil {
		return 0
	}
	return r.Result.E2E.P99
}

// medianRun is the run whose f is the (lower) median.
func medianRun(g *group, f func(record) float64) record {
	rs := slices.Clone(g.runs)
	slices.SortFunc(rs, func(a, b record) int {
		switch fa, fb := f(a), f(b); {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	})
	return rs[(len(rs)-1)/2]
}

func writeRow(w io.Writer, g, kf *group, runs int, limit float64, cols ...string) {
	s := g.mbps()
	kfMed := 0.0
	if kf != nil {
		kfMed = kf.mbps().med
	}
	rps := g.stat(func(r record) float64 { return r.Result.RecordsPerSec }).med
	vsKfake := ratio(s.med, kfMed)
	if cols[len(cols)-1] == "kfake" {
		vsKfake = "1"
	}
	for _, c := range cols {
		if c != "" {
			fmt.Fprintf(w, "| %s ", c)
		}
	}
	if s.n == 0 {
		fmt.Fprintf(w, "| failed (%d runs) | | | | | | | |\n", g.failed)
		return
	}
	fmt.Fprintf(w, "| %s | %.0f | %s | %s | %.2f | %.0f%% | %.0f%% | %s |\n",
		mbCell(s, runs), rps, vsKfake, pct(s.med, limit), g.brokerPerGB(), g.brokerPct(), g.clientPct(), g.boundBy())
}

// floorMode is the bench/floor mode a broker's produce CPU is judged by:
// read, CRC and pwrite, the least a produce must do.
const floorMode = "pwrite"

// writeFloor reports bench/floor and, beside it, the brokers' produce CPU
// per GB with 4 partitions and large batches (workload produce4p) and with
// one partition (the Produce table's producers=1 rows).
func writeFloor(w io.Writer, d *data, runs int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if len(d.floors) == 0 {
		return
	}
	p("### The floor: the least CPU a produce can cost here\n\n")
	p("`benchreport floor` (package `bench/floor`; also `go test -bench Floor ./bench/floor/`): one\n")
	p("thread pinned to CPU 0 reads 1 MiB frames, each 4 record batches of 1 KiB records as a\n")
	p("producer with 1 MB batches sends them, from a loopback TCP socket fed by a thread on\n")
	p("CPU 1; CPU is the reading thread's own (RUSAGE_THREAD). Each mode adds a step: `read`\n")
	p("(read(2) into one buffer), `crc` (+ CRC-32C of each batch), `pwrite` (+ pwrite(2) of each\n")
	p("batch to its partition's file: **the floor**), `reserve` (the same pwrites into blocks\n")
	p("reserved ahead of each file's end with fallocate(2), as the segment backend writes: the\n")
	p("floor of a write path that reserves), `segment` (read, then `segment.Log.Append`:\n")
	p("validation, offsets, reserved pwrite, indexes, rolling: the segment backend's write path).\n")
	p("The `pwrite` and `reserve` rows pool the runs of all modes' block with one run each right before the brokers'\n")
	p("4-partition runs in every round: on this VM the CPU of filling fresh page-cache memory\n")
	p("depends on what was freed just before, so the floor is sampled in the brokers' conditions.\n\n")
	for _, m := range floor.SpliceModes {
		if _, ok := d.floors[m]; ok {
			p("`splice-land`, `splice` and `splice-reserve` land the records with splice(2) instead\n")
			p("of read+pwrite (bench/floor/splice.go; BENCHMARKS.md, \"One copy instead of two\").\n\n")
			break
		}
	}
	p("| mode | MB/s median (min–max) | CPU s/GB median (min–max) |\n|---|---|---|\n")
	for _, m := range append(floor.Modes[:len(floor.Modes):len(floor.Modes)], floor.SpliceModes...) {
		f, ok := d.floors[m]
		if !ok {
			continue
		}
		name := m
		if m == floorMode {
			name = "**pwrite (floor)**"
		}
		p("| %s | %s | %.3f (%.3f–%.3f) |\n", name, mbCell(f.mbps, runs), f.cpuPerGB.med, f.cpuPerGB.min, f.cpuPerGB.max)
	}
	fl := d.floors[floorMode].cpuPerGB.med
	rf := d.floors["reserve"].cpuPerGB.med
	p("\nBrokers beside it: `sluice perf produce --partitions 4 --record-size 1024 --linger 10ms\n")
	p("--batch-max-bytes 1000000 --acks A` (one producer: 4 partitions, large batches) and the\n")
	p("Produce table's one-partition runs (`--partitions 1`, linger 5 ms, franz-go's batches).\n")
	p("\"vs floor\" is the broker's CPU per GB over the floor's (`pwrite`, the issue's), \"vs reserve\"\n")
	p("over the `reserve` floor's; \"vs kfake\" its CPU per GB over kfake's in the same run.\n\n")
	p("| partitions | acks | broker | MB/s median (min–max) | MB/s vs kfake | broker CPU s/GB median (min–max) | vs floor | vs reserve | CPU vs kfake |\n")
	p("|---|---|---|---|---|---|---|---|---|\n")
	row := func(parts, acks, b string, g, kf *group) {
		if g == nil {
			return
		}
		if len(g.runs) == 0 {
			p("| %s | %s | %s | failed (%d runs) | | | | | |\n", parts, acks, b, g.failed)
			return
		}
		cpu := g.stat(func(r record) float64 { return cpuPerGB(r.BrokerCPU, r) })
		kfMB, kfCPU := 0.0, 0.0
		if kf != nil && len(kf.runs) > 0 {
			kfMB, kfCPU = kf.mbps().med, kf.brokerPerGB()
		}
		p("| %s | %s | %s | %s | %s | %.3f (%.3f–%.3f) | %s | %s | %s |\n", parts, acks, b, mbCell(g.mbps(), runs),
			ratio(g.mbps().med, kfMB), cpu.med, cpu.min, cpu.max, ratio(cpu.med, fl), ratio(cpu.med, rf), ratio(cpu.med, kfCPU))
	}
	for _, acks := range []string{"1", "all"} {
		kf := d.get("broker", "kfake", "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks)
		for _, b := range d.brs {
			row("4", acks, b, d.get("broker", b, "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks), kf)
		}
	}
	for _, acks := range []string{"1", "all"} {
		kf := d.get("broker", "kfake", "workload", "produce", "size", "1024", "producers", "1", "acks", acks)
		for _, b := range d.brs {
			row("1", acks, b, d.get("broker", b, "workload", "produce", "size", "1024", "producers", "1", "acks", acks), kf)
		}
	}
	p("\n")
}

// writeTargets checks the brokers against the recorded targets (CPU and
// MB/s against the floor and kfake, replicated produce, consume, latency).
// replicated says the replicated produce section was included above.
func writeTargets(w io.Writer, d *data, dd, sf stat, replicated bool, repl []replRatio) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n### Targets (1 KiB records; recorded, not asserted)\n\n")
	p("| target | measured | met |\n|---|---|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	ok := func(g *group) bool { return g != nil && len(g.runs) > 0 }
	fl, haveFloor := d.floors[floorMode]
	for _, acks := range []string{"1", "all"} {
		g := d.get("broker", "segment", "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks)
		kf := d.get("broker", "kfake", "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks)
		if !ok(g) {
			continue
		}
		wl := "4 partitions, 1 MB batches, acks=" + acks
		sc := g.brokerPerGB()
		if haveFloor {
			f := fl.cpuPerGB.med
			p("| segment produce CPU/GB <= 1.2x the floor (%s) | %.3f vs %.3f s/GB = %s | %s |\n", wl, sc, f, ratio(sc, f), yes(sc <= 1.2*f))
		}
		if ok(kf) {
			kc := kf.brokerPerGB()
			p("| segment produce CPU/GB below kfake's (%s) | %.3f vs %.3f s/GB = %s | %s |\n", wl, sc, kc, ratio(sc, kc), yes(sc < kc))
			s, k := g.mbps().med, kf.mbps().med
			p("| segment produce MB/s ahead of kfake (%s) | %.0f vs %.0f MB/s = %s | %s |\n", wl, s, k, ratio(s, k), yes(s >= k))
		}
	}
	pebble := func(wl string, g, kf *group) {
		if !ok(g) || !ok(kf) {
			return
		}
		s, k := g.mbps().med, kf.mbps().med
		p("| pebble produce >= kfake-disk (%s) | %.0f vs %.0f MB/s = %s | %s |\n", wl, s, k, ratio(s, k), yes(s >= k))
	}
	for _, acks := range []string{"1", "all"} {
		pebble("1 partition, acks="+acks,
			d.get("broker", "pebble", "workload", "produce", "size", "1024", "producers", "1", "acks", acks),
			d.get("broker", "kfake", "workload", "produce", "size", "1024", "producers", "1", "acks", acks))
		pebble("4 partitions, acks="+acks,
			d.get("broker", "pebble", "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks),
			d.get("broker", "kfake", "workload", "produce4p", "size", "1024", "producers", "1", "acks", acks))
	}
	if len(repl) > 0 {
		writeReplTargets(w, repl)
	} else if replicated {
		p("| replicated produce (RF 3) >= 0.4x the single node | see \"Replicated produce\" above | (there) |\n")
	}
	g := d.get("broker", "segment", "workload", "consume", "size", "1024")
	kf := d.get("broker", "kfake", "workload", "consume", "size", "1024")
	if ok(g) && ok(kf) {
		s, k := g.mbps().med, kf.mbps().med
		p("| consume >= 1.5x kfake (issue 5) | %.0f vs %.0f MB/s = %s | %s |\n", s, k, ratio(s, k), yes(s >= 1.5*k))
		p("| consume >= 50%% of sendfile → TCP (issue 5) | %.0f of %.0f MB/s = %s | %s |\n", s, sf.med, pct(s, sf.med), yes(s >= 0.5*sf.med))
	}
	if e := d.get("broker", "segment", "workload", "e2e", "size", "1024"); ok(e) {
		v := e.stat(e2eP99).med
		p("| e2e p99 < 2 ms at the fixed rate (issue 5) | %.2f ms (median of runs) | %s |\n", v, yes(v > 0 && v < 2))
		if kf := d.get("broker", "kfake", "workload", "e2e", "size", "1024"); ok(kf) {
			k := kf.stat(e2eP99).med
			p("| e2e p99 < 1 ms at the fixed rate, and below kfake's (issue 33) | %.2f vs %.2f ms (medians of runs) | %s |\n",
				v, k, yes(v > 0 && v < 1 && v < k))
		}
	}
}

// writeProfiles includes the pprof -top outputs of the profile pass.
func writeProfiles(w io.Writer, dir string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	any := false
	for _, kind := range []string{"Produce", "Consume"} {
		bench := readLines(filepath.Join(dir, kind+".bench"))
		if len(bench) == 0 {
			continue
		}
		if !any {
			p("\n### Profiles\n\n")
			p("`go test -run '^$' -bench '^BenchmarkKIND$/^backend=segment$' -cpuprofile -memprofile ./bench/`\n")
			p("(client and broker in one process, so the client's costs are in the profile too), then\n")
			p("`go tool pprof -top` (flat), `-top -cum`, and `-sample_index=alloc_space`. What they mean\n")
			p("is in \"Profile notes\" below the generated section.\n")
			any = true
		}
		p("\n#### %s/backend=segment\n\n```\n", kind)
		for _, l := range bench {
			if strings.HasPrefix(l, "Benchmark") {
				p("%s\n", l)
			}
		}
		p("```\n")
		for _, f := range []struct{ suffix, title string }{
			{".cpu.top", "CPU, flat"}, {".cpucum.top", "CPU, cumulative, broker packages only (-focus)"}, {".mem.top", "allocated bytes"},
		} {
			lines := readLines(filepath.Join(dir, kind+f.suffix))
			if len(lines) == 0 {
				continue
			}
			p("\n%s:\n\n```\n", f.title)
			for _, l := range lines {
				// Skip the header lines that name the binary and the time.
				if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Type:") ||
					strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Build ID:") {
					continue
				}
				p("%s\n", l)
			}
			p("```\n")
		}
	}
}

func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
