package coordlog

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... +
// s[n-1] over the UTF-16 code units of s, in int32 arithmetic.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			// A surrogate pair: two code units.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is the partition, of n, of a coordinator's internal topic
// that holds key: a group id in __consumer_offsets (Kafka's
// GroupMetadataManager.partitionFor) or a transactional id in
// __transaction_state (TransactionStateManager.partitionFor), both
// Utils.abs(key.hashCode) % n, where Utils.abs maps Integer.MIN_VALUE to 0.
// Part of the protocol: every broker and Kafka itself must agree on it.
// REQUIRES: n > 0.
func PartitionFor(key string, n int32) int32 {
	h := javaStringHashCode(key)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}
