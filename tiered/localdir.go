package tiered

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LocalDir is the local-directory RemoteStorageManager, the development
// backend (rsm.config.dir). Layout under its root, following the layout of
// Aiven's tiered storage plugin:
//
//	<root>/<topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>.<suffix>
//
// with suffixes log, index, timeindex, txnindex (when the segment has
// aborted transactions), snapshot (the producer snapshot at the segment's
// end, when there is one) and leader_epoch_checkpoint. Ids are Kafka's Uuid
// strings (URL-safe base64). Each object is written to "<name>.tmp",
// fsynced, renamed and the directory fsynced, so a crash leaves no torn
// object under a final name; DeleteLogSegmentData removes the .tmp ones
// too.
type LocalDir struct {
	root string
}

// NewLocalDir returns the backend rooted at dir, creating it.
func NewLocalDir(dir string) (*LocalDir, error) {
	if dir == "" {
		return nil, errors.New("tiered: rsm.config.dir is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	return &LocalDir{root: dir}, nil
}

var suffixes = map[IndexType]string{
	IndexOffset:           "index",
	IndexTimestamp:        "timeindex",
	IndexProducerSnapshot: "snapshot",
	IndexTransaction:      "txnindex",
	IndexLeaderEpoch:      "leader_epoch_checkpoint",
}

func (d *LocalDir) partitionDir(tp TopicIDPartition) string {
	return filepath.Join(d.root, tp.Topic+"-"+tp.TopicID.String(), strconv.Itoa(int(tp.Partition)))
}

func objectPrefix(md SegmentMetadata) string {
	return fmt.Sprintf("%020d-%s.", md.StartOffset, md.SegmentID)
}

func (d *LocalDir) object(md SegmentMetadata, suffix string) string {
	return filepath.Join(d.partitionDir(md.Partition), objectPrefix(md)+suffix)
}

// CopyLogSegmentData implements RemoteStorageManager.
func (d *LocalDir) CopyLogSegmentData(md SegmentMetadata, data LogSegmentData) error {
	dir := d.partitionDir(md.Partition)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	type obj struct {
		suffix string
		src    string
		n      int64 // -1: whole file
		bytes  []byte
	}
	objs := []obj{
		{suffix: suffixes[IndexOffset], src: data.OffsetIndex, n: -1},
		{suffix: suffixes[IndexTimestamp], src: data.TimeIndex, n: -1},
		{suffix: suffixes[IndexLeaderEpoch], bytes: data.LeaderEpochs},
	}
	if data.TxnIndex != "" {
		objs = append(objs, obj{suffix: suffixes[IndexTransaction], src: data.TxnIndex, n: -1})
	}
	if data.ProducerSnapshot != "" {
		objs = append(objs, obj{suffix: suffixes[IndexProducerSnapshot], src: data.ProducerSnapshot, n: -1})
	}
	// The log last: a reader that finds it finds the indexes.
	objs = append(objs, obj{suffix: "log", src: data.Log, n: data.LogBytes})
	for _, o := range objs {
		final := d.object(md, o.suffix)
		var err error
		if o.src == "" {
			err = writeAtomic(final, func(w io.Writer) error { _, err := w.Write(o.bytes); return err })
		} else {
			err = writeAtomic(final, func(w io.Writer) error { return copyFile(w, o.src, o.n) })
		}
		if err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func copyFile(w io.Writer, src string, n int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if n >= 0 {
		r = io.LimitReader(f, n)
	}
	got, err := io.Copy(w, r)
	if err == nil && n >= 0 && got != n {
		err = fmt.Errorf("%s: %d bytes, want %d", src, got, n)
	}
	return err
}

// writeAtomic writes final through a temporary file, fsynced then renamed.
func writeAtomic(final string, write func(io.Writer) error) error {
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%w: write %s: %v", ErrRemoteStorage, final, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: sync %s: %v", ErrRemoteStorage, dir, err)
	}
	return nil
}

func openObject(path string) (*os.File, error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", ErrRemoteNotFound, path)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	return f, nil
}

// FetchLogSegment implements RemoteStorageManager.
func (d *LocalDir) FetchLogSegment(md SegmentMetadata, startPos int64) (io.ReadCloser, error) {
	f, err := openObject(d.object(md, "log"))
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(startPos, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	return f, nil
}

// FetchIndex implements RemoteStorageManager.
func (d *LocalDir) FetchIndex(md SegmentMetadata, t IndexType) (io.ReadCloser, error) {
	s, ok := suffixes[t]
	if !ok {
		return nil, fmt.Errorf("tiered: index type %d", t)
	}
	return openObject(d.object(md, s))
}

// DeleteLogSegmentData implements RemoteStorageManager.
func (d *LocalDir) DeleteLogSegmentData(md SegmentMetadata) error {
	dir := d.partitionDir(md.Partition)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	prefix := objectPrefix(md)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
			}
		}
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	// The partition's and topic's dirs go with their last object.
	if os.Remove(dir) == nil {
		os.Remove(filepath.Dir(dir))
	}
	return nil
}

// DeleteOrphans implements OrphanDeleter: every file of the partition's
// directory whose segment id keep does not name is removed (.tmp ones
// included).
func (d *LocalDir) DeleteOrphans(tp TopicIDPartition, keep func(UUID) bool) (int, error) {
	dir := d.partitionDir(tp)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	n := 0
	for _, e := range entries {
		if id, ok := segmentIDOf(e.Name()); ok && !keep(id) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, fmt.Errorf("%w: %v", ErrRemoteStorage, err)
			}
			n++
		}
	}
	if n > 0 {
		if err := syncDir(dir); err != nil {
			return n, err
		}
	}
	if os.Remove(dir) == nil {
		os.Remove(filepath.Dir(dir))
	}
	return n, nil
}
