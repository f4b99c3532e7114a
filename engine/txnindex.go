package engine

// AbortedTxn is one aborted transaction of a partition, as Kafka's
// AbortedTxn (an entry of a segment's .txnindex) and the aborted
// transactions of a read_committed Fetch response: the producer's
// transactional records lie in [FirstOffset, LastOffset), LastOffset is the
// offset of the ABORT marker that ended it, and LastStableOffset is the
// partition's last stable offset once the marker was written (the first
// offset of the earliest other transaction still open, or LastOffset+1).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// TxnIndex is an optional capability of a Log, found by type assertion (as
// Compactable): the log's aborted-transaction index, Kafka's per-segment
// .txnindex. Each entry belongs with the batch at its LastOffset (the
// marker): Truncate below LastOffset drops it, retention and DeleteBefore
// drop it with the segment (or equivalent) holding the marker, cleaning
// keeps it, TruncateFullyAndStartAt drops every entry. Every backend in
// this repository implements it. Safe for concurrent use like Log; the
// partition appends entries from the goroutine that appends to the log.
type TxnIndex interface {
	// AppendAbortedTxn records an aborted transaction whose marker
	// (t.LastOffset) is already in the log, below EndOffset; entries are
	// appended in increasing LastOffset. A marker offset outside
	// [StartOffset, EndOffset) gives ErrOffsetOutOfRange. Durable with
	// the log's next Flush, as the indexes of segment are.
	AppendAbortedTxn(t AbortedTxn) error
	// AbortedTxns returns the aborted transactions that overlap
	// [from, upTo): LastOffset >= from and FirstOffset < upTo, in the
	// order they were appended, in a new slice the caller owns (nil
	// when none). Like Kafka's collectAbortedTransactions it may stop at
	// the first entry whose LastStableOffset >= upTo, since no later
	// entry can overlap the range.
	AbortedTxns(from, upTo int64) ([]AbortedTxn, error)
}

// OverlapsAbortedTxn reports whether t overlaps [from, upTo), the test of
// TxnIndex.AbortedTxns; done reports that no later entry can (the search
// is complete), as Kafka's TransactionIndex.collectAbortedTxns.
func OverlapsAbortedTxn(t AbortedTxn, from, upTo int64) (overlaps, done bool) {
	return t.LastOffset >= from && t.FirstOffset < upTo, t.LastStableOffset >= upTo
}
