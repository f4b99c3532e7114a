package coordlog

import "testing"

// TestPartitionFor pins Kafka's placement of group and transactional ids:
// abs(String.hashCode) % n.
func TestPartitionFor(t *testing.T) {
	for _, tt := range []struct {
		group string
		hash  int32
		part  int32 // of 50
	}{
		// By hand: ((116*31+101)*31+115)*31+116 = 3556498; % 50 = 48.
		{"test", 3556498, 48},
		{"", 0, 0},
		{"a", 97, 47},
		// Java's famous String whose hashCode is Integer.MIN_VALUE:
		// Kafka's Utils.abs maps it to 0.
		{"polygenelubricants", -2147483648, 0},
		// Overflowing and negative: Math.abs(-1906497762) % 50 = 12.
		{"my-group", -1906497762, 12},
		// U+1F600 is two UTF-16 code units: 0xD83D*31 + 0xDE00 = 1772899.
		{"\U0001F600", 1772899, 49},
		// A transactional id: "my-txn".hashCode() == -1061187895 in Java.
		{"my-txn", -1061187895, 45},
	} {
		t.Run(tt.group, func(t *testing.T) {
			if got := javaStringHashCode(tt.group); got != tt.hash {
				t.Errorf("hashCode(%q) = %d, want %d", tt.group, got, tt.hash)
			}
			if got := PartitionFor(tt.group, 50); got != tt.part {
				t.Errorf("partitionFor(%q, 50) = %d, want %d", tt.group, got, tt.part)
			}
		})
	}
}
