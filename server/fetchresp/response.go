package fetchresp

import "github.com/sluice/sluice/zerocopy"

// Response is a Fetch response to encode with Write. Fields a version lacks
// are ignored (see the table in the package doc). Integer fields default to
// their Go zero values; Kafka's "unknown" values (-1 for LastStableOffset,
// LogStartOffset, PreferredReadReplica) must be set by the caller.
type Response struct {
	ThrottleMillis int32 // throttle_time_ms
	ErrorCode      int16 // v7+: top-level error (fetch sessions)
	SessionID      int32 // v7+: fetch session id, 0 for none
	Topics         []Topic
	// NodeEndpoints is v16+'s tagged field 0: the leaders named by
	// CurrentLeader of partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951).
	// Empty means the tag is left out.
	NodeEndpoints []NodeEndpoint
}

// Topic is one topic of a Response.
type Topic struct {
	Name       string   // v4..v12
	ID         [16]byte // v13+: the topic ID instead of the name
	Partitions []Partition
}

// Partition is one partition of a Topic.
type Partition struct {
	Partition        int32
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64 // -1 when unknown
	LogStartOffset   int64 // v5+; -1 when unknown
	// AbortedTransactions in the returned range (read_committed fetches).
	// nil encodes as a null array, a non-nil empty slice as an empty one.
	AbortedTransactions  []AbortedTransaction
	PreferredReadReplica int32 // v11+; -1 for none

	// Records are whole record batches (a trailing partial batch is allowed,
	// clients drop it). Write takes ownership: the slice is handed to the
	// zerocopy.Writer, which Releases it after sending. An empty slice
	// encodes as empty (length 0) records, as Kafka does.
	Records zerocopy.Slice

	// Tagged fields (v12+); nil leaves the tag out.
	DivergingEpoch *EpochEndOffset   // tag 0
	CurrentLeader  *LeaderIDAndEpoch // tag 1
	SnapshotID     *SnapshotID       // tag 2
}

// AbortedTransaction is one entry of Partition.AbortedTransactions.
type AbortedTransaction struct {
	ProducerID  int64
	FirstOffset int64
}

// EpochEndOffset is the diverging epoch tag (KIP-320 truncation detection).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// LeaderIDAndEpoch is the current leader tag (KIP-951).
type LeaderIDAndEpoch struct {
	LeaderID    int32
	LeaderEpoch int32
}

// SnapshotID is the snapshot id tag (KRaft fetch snapshot).
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

// NodeEndpoint is one entry of Response.NodeEndpoints.
type NodeEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string // nil for no rack
}

// release drops every Records slice of r: Write's cleanup on error.
func (r *Response) release() {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].Records.Release()
		}
	}
}
