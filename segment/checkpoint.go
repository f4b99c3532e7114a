package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/internal/fsutil"
)

// errBadCheckpoint marks a checkpoint file that does not parse.
var errBadCheckpoint = errors.New("segment: bad checkpoint file")

// writeFileAtomic replaces path with data: write path.tmp, fsync, rename,
// fsync the directory (etcd's wal.go), so a crash leaves the old or the new
// contents.
func writeFileAtomic(path string, data []byte) error { return writeFile(path, data, true) }

// writeFileRenamed replaces path with data like writeFileAtomic but
// without its fsyncs: a process crash leaves the old contents or the new
// ones; a machine crash before the data is written back may leave the
// file missing, empty or partly written under its final name, so only
// data whose reader detects damage (a CRC) and can do without it may be
// written this way. Store.Close's syncfs makes it durable.
func writeFileRenamed(path string, data []byte) error { return writeFile(path, data, false) }

// testHookDurableWrite, when set (by tests), is called with the path of
// every file writeFile writes durably.
var testHookDurableWrite func(path string)

// writeFile writes data to path.tmp and renames it to path, with the
// fsyncs of the file and the directory when durable.
func writeFile(path string, data []byte, durable bool) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("segment: write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if durable && testHookDurableWrite != nil {
		testHookDurableWrite(path)
	}
	if err == nil && durable && !fsyncOff.Load() {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && durable {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("segment: write %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory, making renames and creations in it durable
// (fsutil.SyncDir; nothing when tests turned fsync off).
func syncDir(dir string) error {
	if fsyncOff.Load() {
		return nil
	}
	return fsutil.SyncDir(dir)
}

// readCheckpoint reads the checkpoint file at path; ok is false when there
// is none.
func readCheckpoint(path string) (data []byte, ok bool, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("segment: read %s: %w", path, err)
	}
	return data, true, nil
}

// parseCheckpointLines returns a checkpoint's entry lines after checking
// the version and count header, each split into fields (want per line).
// Lines end in '\n' or "\r\n" (a file edited on Windows; the last line
// may lack either). An error wraps errBadCheckpoint; path only names the
// file in it.
func parseCheckpointLines(path string, data []byte, want int) ([][]string, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", errBadCheckpoint, path, fmt.Sprintf(format, args...))
	}
	if len(lines) < 2 {
		return nil, bad("%d lines, need a version and a count", len(lines))
	}
	if strings.TrimSpace(lines[0]) != strconv.Itoa(checkpointVersion) {
		return nil, bad("version %q", lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, bad("count %q does not match %d entry lines", lines[1], len(lines)-2)
	}
	out := make([][]string, 0, n)
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != want {
			return nil, bad("line %d: %q has %d fields, want %d", i+3, l, len(f), want)
		}
		out = append(out, f)
	}
	return out, nil
}

// readOffsetCheckpoint reads "topic partition offset" entries; a missing
// file gives an empty map.
func readOffsetCheckpoint(path string) (map[engine.PartitionID]int64, error) {
	data, ok, err := readCheckpoint(path)
	if err != nil || !ok {
		return map[engine.PartitionID]int64{}, err
	}
	return parseOffsetCheckpoint(path, data)
}

// parseOffsetCheckpoint parses an offset checkpoint (see format.go); an
// error wraps errBadCheckpoint. An entry repeated for one partition keeps
// the last offset.
func parseOffsetCheckpoint(path string, data []byte) (map[engine.PartitionID]int64, error) {
	lines, err := parseCheckpointLines(path, data, 3)
	if err != nil {
		return nil, err
	}
	m := make(map[engine.PartitionID]int64, len(lines))
	for _, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%w: %s: bad entry %q", errBadCheckpoint, path, strings.Join(f, " "))
		}
		m[engine.PartitionID{Topic: f[0], Partition: int32(p)}] = o
	}
	return m, nil
}

// writeOffsetCheckpoint writes m as an offset checkpoint at path.
func writeOffsetCheckpoint(path string, m map[engine.PartitionID]int64) error {
	return writeFileAtomic(path, appendOffsetCheckpoint(nil, m))
}

// appendOffsetCheckpoint appends m in the offset checkpoint format to b,
// entries in no particular order.
func appendOffsetCheckpoint(b []byte, m map[engine.PartitionID]int64) []byte {
	b = strconv.AppendInt(b, checkpointVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(m)), 10)
	b = append(b, '\n')
	for id, off := range m {
		b = append(b, id.Topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(id.Partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, off, 10)
		b = append(b, '\n')
	}
	return b
}

// readEpochCheckpoint reads a leader-epoch-checkpoint. A missing file
// gives nil (and no error), which loadLog tells from an empty checkpoint:
// it rebuilds the epochs of a non-empty log from its batches.
func readEpochCheckpoint(path string) ([]engine.EpochEntry, error) {
	data, ok, err := readCheckpoint(path)
	if err != nil || !ok {
		return nil, err
	}
	return parseEpochCheckpoint(path, data)
}

// parseEpochCheckpoint parses a leader-epoch-checkpoint (see format.go);
// an error wraps errBadCheckpoint. Entries come back in file order,
// unchecked for order: engine.NewEpochCache drops what is not ascending.
func parseEpochCheckpoint(path string, data []byte) ([]engine.EpochEntry, error) {
	lines, err := parseCheckpointLines(path, data, 2)
	if err != nil {
		return nil, err
	}
	out := make([]engine.EpochEntry, 0, len(lines))
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("%w: %s: bad entry %q", errBadCheckpoint, path, strings.Join(f, " "))
		}
		out = append(out, engine.EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}

// writeEpochCheckpoint writes entries as a leader-epoch-checkpoint.
func writeEpochCheckpoint(path string, entries []engine.EpochEntry) error {
	return writeFileAtomic(path, appendEpochCheckpoint(nil, entries))
}

// appendEpochCheckpoint appends entries in the leader-epoch-checkpoint
// format to b.
func appendEpochCheckpoint(b []byte, entries []engine.EpochEntry) []byte {
	b = strconv.AppendInt(b, checkpointVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}
