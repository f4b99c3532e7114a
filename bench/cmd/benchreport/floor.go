package main

import (
	"encoding/json"
	"flag"
	"os"
	"strings"

	"github.com/sluice/sluice/bench/floor"
)

// floorCmd runs bench/floor's modes and prints one results line (kind
// "floor") per mode and run: the least CPU per GB a produce can cost here.
func floorCmd(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	dir := fs.String("dir", os.TempDir(), "directory for the files written")
	modes := fs.String("modes", strings.Join(floor.Modes, ","), "comma-separated modes")
	runs := fs.Int("runs", 3, "runs of each mode")
	mib := fs.Int64("total-mib", 2048, "MiB read per run")
	partitions := fs.Int("partitions", 4, "batches per frame, each to its own file or log")
	frame := fs.Int("frame-bytes", 1<<20, "bytes per frame (one produce request)")
	recordSize := fs.Int("record-size", 1024, "value bytes per record")
	readerCPU := fs.Int("reader-cpu", 0, "CPU the reader is pinned to (-1: none)")
	writerCPU := fs.Int("writer-cpu", 1, "CPU the writer is pinned to (-1: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for range *runs {
		for _, m := range strings.Split(*modes, ",") {
			d, err := os.MkdirTemp(*dir, "floor-")
			if err != nil {
				return err
			}
			res, err := floor.Run(floor.Config{
				Mode: m, Dir: d, FrameBytes: *frame, Partitions: *partitions, RecordSize: *recordSize,
				TotalBytes: *mib << 20, ReaderCPU: *readerCPU, WriterCPU: *writerCPU,
			})
			os.RemoveAll(d)
			if err != nil {
				return err
			}
			if err := enc.Encode(record{Kind: "floor", Name: res.Mode, MBps: res.MBPerSec, CPUPerGB: res.CPUPerGB}); err != nil {
				return err
			}
		}
	}
	return nil
}
