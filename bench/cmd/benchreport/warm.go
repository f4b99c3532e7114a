package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// warmCmd touches memory and frees it: all of MemAvailable but -leave-mib,
// or -mib when set. On a VM whose host backs guest memory only once it is
// touched (and takes back what the guest reports free), the first write to
// a page costs a trip to the host: the page-cache pages a benchmark's
// writes take would pay it, by luck of which free pages they get. Touched
// here, the memory stays backed after this process exits as long as the
// guest does not report it free (scripts/bench-lib.sh: vm_quiet).
func warmCmd(args []string) error {
	fs := flag.NewFlagSet("warm", flag.ContinueOnError)
	mib := fs.Int64("mib", 0, "MiB to touch (0: MemAvailable less -leave-mib)")
	leave := fs.Int64("leave-mib", 3072, "MiB of MemAvailable left untouched")
	if err := fs.Parse(args); err != nil {
		return err
	}
	avail, err := memAvailableMiB()
	if err != nil {
		return err
	}
	n := *mib
	if n <= 0 {
		n = avail - *leave
	} else if n > avail-512 {
		return fmt.Errorf("-mib %d: only %d MiB available, and 512 must stay free", n, avail)
	}
	if n <= 0 {
		return nil
	}
	const page = 4096
	b := make([]byte, n<<20)
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	fmt.Fprintf(os.Stderr, "benchreport warm: touched %d MiB\n", n)
	return nil
}

// memAvailableMiB reads MemAvailable from /proc/meminfo.
func memAvailableMiB() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb >> 10, err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
}
