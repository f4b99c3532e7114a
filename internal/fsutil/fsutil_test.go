package fsutil

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v1098", true},
		{"5.8.0", true},
		{"5.8-rc1", true},
		{"5.7.19", false},
		{"4.19.0-generic", false},
		{"10.0", true},
		{"", false},
		{"garbage", false},
		{"5.x", false},
	} {
		t.Run(tc.release, func(t *testing.T) {
			if got := kernelAtLeast(tc.release, 5, 8); got != tc.want {
				t.Fatalf("kernelAtLeast(%q, 5, 8) = %v, want %v", tc.release, got, tc.want)
			}
		})
	}
}
