package record

import "testing"

func TestStoredSizeFits(t *testing.T) {
	for _, tc := range []struct {
		n    int
		left int64
		want bool
	}{
		{HeaderSize, HeaderSize, true},
		{HeaderSize - 1, 1 << 20, false},
		{-1, 1 << 20, false},
		{LogOverhead + MaxBatchSize, 1 << 40, true},
		{LogOverhead + MaxBatchSize + 1, 1 << 40, false},
		{HeaderSize + 10, HeaderSize + 9, false},
	} {
		if got := StoredSizeFits(tc.n, tc.left); got != tc.want {
			t.Errorf("StoredSizeFits(%d, %d) = %v, want %v", tc.n, tc.left, got, tc.want)
		}
	}
}
