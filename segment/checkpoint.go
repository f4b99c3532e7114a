package segment

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice/sluice/engine"
)

// errBadCheckpoint marks a checkpoint file that does not parse.
var errBadCheckpoint = errors.New("segment: bad checkpoint file")

// writeFileAtomic replaces path with data: write path.tmp, fsync, rename,
// fsync the directory (etcd's wal.go), so a crash leaves the old or the new
// contents.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("segment: checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil && !fsyncOff.Load() {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("segment: checkpoint %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory, making renames and creations in it durable.
func syncDir(dir string) error {
	if fsyncOff.Load() {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readCheckpointLines reads a checkpoint's entry lines after checking the
// version and count header, each split into fields (want per line). A
// missing file gives no lines and no error.
func readCheckpointLines(path string, want int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segment: read %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
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

// readOffsetCheckpoint reads "topic partition offset" entries.
func readOffsetCheckpoint(path string) (map[engine.PartitionID]int64, error) {
	lines, err := readCheckpointLines(path, 3)
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
	var b []byte
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
	return writeFileAtomic(path, b)
}

// readEpochCheckpoint reads a leader-epoch-checkpoint.
func readEpochCheckpoint(path string) ([]engine.EpochEntry, error) {
	lines, err := readCheckpointLines(path, 2)
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
	var b []byte
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
	return writeFileAtomic(path, b)
}
