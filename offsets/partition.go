package offsets

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

// PartitionFor is the partition of __consumer_offsets, of n, that holds
// group: Kafka's GroupMetadataManager.partitionFor,
// Utils.abs(groupId.hashCode) % offsets.topic.num.partitions, where
// Utils.abs maps Integer.MIN_VALUE to 0. Part of the protocol: every
// broker and Kafka itself must agree on it. REQUIRES: n > 0.
func PartitionFor(group string, n int32) int32 {
	h := javaStringHashCode(group)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}
