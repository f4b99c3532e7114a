package server

import "testing"

// TestDescribeLogDirsVolumeSpace: the volume sizes DescribeLogDirs v4
// reports are in bytes and consistent. The fix behind it is a build one
// (statfs field widths differ by platform: `GOOS=darwin go vet ./server/`
// and `GOOS=linux GOARCH=386 go build ./...` must compile).
func TestDescribeLogDirsVolumeSpace(t *testing.T) {
	total, usable, err := volumeSpace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if total <= 0 || usable < 0 || usable > total {
		t.Fatalf("volumeSpace: total %d, usable %d", total, usable)
	}
	if total < 1<<20 {
		t.Errorf("total %d bytes: blocks not multiplied by the block size?", total)
	}
}
