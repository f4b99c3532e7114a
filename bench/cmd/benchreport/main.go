// Command benchreport is the Go half of scripts/bench-report.sh: the parts
// that are awkward in shell.
//
//	benchreport freeport
//	    print a free TCP port on 127.0.0.1
//	benchreport limits -dir DIR [-size-mib 256] [-seconds 2] [-runs 3]
//	    measure loopback TCP from a page-cache file with sendfile(2) and
//	    from memory with write(2), each into a reader that discards; one
//	    JSON line per run on stdout
//	benchreport measure -pid PID -out FILE [-tag k=v ...] -- CMD ARGS...
//	    run CMD (a `sluice perf ... --json`), and append one JSON line to
//	    FILE with its result, the CPU seconds CMD used (its rusage, children
//	    included) and the CPU seconds process PID (the broker) used meanwhile
//	    (utime+stime from /proc/PID/stat)
//	benchreport floor -dir DIR [-modes read,crc,pwrite,segment] [-runs 3]
//	    the least CPU per GB a produce can cost here (bench/floor): a
//	    pinned reader takes 1 MiB frames off loopback TCP and CRCs and
//	    pwrites them, or appends them to segment logs; one JSON line per
//	    mode and run
//	benchreport warm [-mib N] [-leave-mib 3072]
//	    touch (and free) all of MemAvailable but -leave-mib, or N MiB
//	benchreport render -results FILE -svg PATH [flags]
//	    write the markdown report on stdout and the chart to PATH
//	benchreport omb -out BENCHMARKS.md -meta TEXT results.json...
//	    rewrite the marked OMB, partitions, headline and targets sections
//	benchreport gobench -out BENCHMARKS.md -section NAME -meta TEXT [-cols U=H,...] FILE...
//	    rewrite one marked section with a table of `go test -bench` output:
//	    a row per benchmark, the median and range of its runs per unit
//	benchreport ombmax PROBE.json...
//	    print the highest probe rate (records/s) of `sluice perf omb
//	    --rates none` results: the maximum every broker then runs at
//	benchreport ombmerge -out FILE PROBE.json RATES.json
//	    join a broker's probe-only result and its fixed-rate result
//
// Every line of the results file is one JSON object (see record).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchreport freeport|limits|measure|floor|warm|render|omb|gobench|ombmax|ombmerge [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		err = freeport()
	case "limits":
		err = limits(os.Args[2:])
	case "measure":
		err = measure(os.Args[2:])
	case "floor":
		err = floorCmd(os.Args[2:])
	case "warm":
		err = warmCmd(os.Args[2:])
	case "render":
		err = render(os.Args[2:])
	case "omb":
		err = ombCmd(os.Args[2:])
	case "gobench":
		err = gobenchCmd(os.Args[2:])
	case "ombmax":
		err = ombMaxCmd(os.Args[2:])
	case "ombmerge":
		err = ombMergeCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchreport %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
