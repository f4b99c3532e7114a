package tiered

import (
	"encoding/base64"
	"errors"
	"io"
	"strings"
)

// Errors of a RemoteStorageManager, classified with errors.Is.
var (
	// ErrRemoteNotFound: an object the metadata names is missing (Kafka's
	// RemoteResourceNotFoundException).
	ErrRemoteNotFound = errors.New("tiered: remote object not found")
	// ErrRemoteStorage: the remote storage failed (Kafka's
	// RemoteStorageException); the caller retries later.
	ErrRemoteStorage = errors.New("tiered: remote storage failure")
)

// IndexType names the indexes of a remote segment (Kafka's
// RemoteStorageManager.IndexType).
type IndexType int

const (
	IndexOffset IndexType = iota
	IndexTimestamp
	IndexProducerSnapshot
	IndexTransaction
	IndexLeaderEpoch
)

// LogSegmentData is what is copied of one segment (Kafka's
// LogSegmentData): paths of local files, "" for an optional one that does
// not exist, and the leader-epoch checkpoint's bytes.
type LogSegmentData struct {
	Log              string
	LogBytes         int64 // how much of Log is the segment (its batches)
	OffsetIndex      string
	TimeIndex        string
	TxnIndex         string // "": none (TxnIndexEmpty)
	ProducerSnapshot string // "": none
	LeaderEpochs     []byte // Kafka's leader-epoch-checkpoint text
}

// RemoteStorageManager stores segments in a remote tier (Kafka's
// interface of the same name). Implementations are safe for concurrent
// use. Errors wrap ErrRemoteNotFound or ErrRemoteStorage.
type RemoteStorageManager interface {
	// CopyLogSegmentData copies a segment's files under md.SegmentID. It
	// is atomic per object: an object is either absent or whole, never
	// torn, even after a crash; a copy cut short leaves objects that
	// DeleteLogSegmentData removes. Copying one id twice is not allowed.
	CopyLogSegmentData(md SegmentMetadata, data LogSegmentData) error
	// FetchLogSegment returns the segment's .log object from byte
	// startPos on; the caller closes it and reads only what it needs.
	FetchLogSegment(md SegmentMetadata, startPos int64) (io.ReadCloser, error)
	// FetchIndex returns one of the segment's indexes whole;
	// ErrRemoteNotFound for an optional one it does not have.
	FetchIndex(md SegmentMetadata, t IndexType) (io.ReadCloser, error)
	// DeleteLogSegmentData removes every object of the segment, and any
	// left by a copy cut short; deleting what is absent is not an error.
	DeleteLogSegmentData(md SegmentMetadata) error
}

// OrphanDeleter is an optional power of a RemoteStorageManager: it deletes
// the objects of a partition's segments that keep does not name, whole or
// left by a copy cut short. A copy that timed out against a hung store
// can still land after its cleanup listed the objects (the store
// processes the request once it runs again), leaving objects no metadata
// names; the remote log manager sweeps them with it once a partition's
// store calls succeed again after failures, and wipes a deleted
// partition's prefix with it (keep names nothing).
type OrphanDeleter interface {
	DeleteOrphans(tp TopicIDPartition, keep func(UUID) bool) (deleted int, err error)
}

// segmentIDOf parses the segment id out of an object name
// "<start offset>-<segment id>.<suffix>"; ok is false for another name.
func segmentIDOf(name string) (UUID, bool) {
	_, rest, ok := strings.Cut(name, "-")
	if !ok {
		return UUID{}, false
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok {
		return UUID{}, false
	}
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != len(u) {
		return UUID{}, false
	}
	copy(u[:], b)
	return u, true
}
