package tiered

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice/sluice/internal/s3test"
)

// newTestS3 starts versitygw and returns the backend over a fresh bucket.
func newTestS3(t *testing.T, srv *s3test.Server, partSize int64) *S3 {
	t.Helper()
	props := map[string]string{
		S3KeyBucket:          "tiered",
		S3KeyEndpoint:        srv.Endpoint(),
		S3KeyPathStyle:       "true",
		S3KeyAccessKeyID:     s3test.Access,
		S3KeySecretAccessKey: s3test.Secret,
		KeyPrefix:            "cluster-a/",
		S3KeyCallTimeout:     "5000",
	}
	c, err := S3ConfigOf(props)
	if err != nil {
		t.Fatal(err)
	}
	if partSize > 0 {
		c.PartSize = partSize
	}
	s, err := NewS3(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(); err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestS3CopyFetchDelete copies a segment whose log takes a multipart
// upload (three parts of the minimum size, the last one short), reads it
// back from several positions through ranged GETs and its indexes whole,
// then deletes it: the bucket holds nothing under the prefix after.
func TestS3CopyFetchDelete(t *testing.T) {
	srv := s3test.Start(t)
	s := newTestS3(t, srv, s3MinPartSize)
	dir := t.TempDir()
	log := make([]byte, 2*s3MinPartSize+12345)
	rand.Read(log)
	idx := []byte("offset index bytes")
	md := SegmentMetadata{
		Partition:   TopicIDPartition{TopicID: UUID{1, 2, 3}, Topic: "orders", Partition: 3},
		SegmentID:   UUID{9, 9, 9},
		StartOffset: 1000,
		SizeInBytes: int64(len(log)) - 100, // the file has 100 bytes past the segment
	}
	data := LogSegmentData{
		Log:          writeFile(t, filepath.Join(dir, "s.log"), log),
		LogBytes:     md.SizeInBytes,
		OffsetIndex:  writeFile(t, filepath.Join(dir, "s.index"), idx),
		TimeIndex:    writeFile(t, filepath.Join(dir, "s.timeindex"), nil),
		LeaderEpochs: []byte("0\n1\n0 0\n"),
	}
	if err := s.CopyLogSegmentData(md, data); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List("cluster-a/")
	if err != nil {
		t.Fatal(err)
	}
	want := "cluster-a/orders-" + md.Partition.TopicID.String() + "/3/00000000000000001000-" + md.SegmentID.String() + ".log"
	found := false
	for _, k := range keys {
		found = found || k == want
	}
	if len(keys) != 4 || !found {
		t.Fatalf("objects %q, want 4 with %s", keys, want)
	}
	for _, pos := range []int64{0, 1, s3MinPartSize - 1, s3MinPartSize, md.SizeInBytes - 1, md.SizeInBytes} {
		rc, err := s.FetchLogSegment(md, pos)
		if err != nil {
			t.Fatalf("fetch at %d: %v", pos, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read at %d: %v", pos, err)
		}
		if !bytes.Equal(got, log[pos:md.SizeInBytes]) {
			t.Fatalf("at %d: %d bytes, want %d (equal prefix: %t)", pos, len(got), md.SizeInBytes-pos, bytes.HasPrefix(log[pos:], got))
		}
	}
	rc, err := s.FetchIndex(md, IndexOffset)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, idx) {
		t.Fatalf("offset index %q, want %q", got, idx)
	}
	if _, err := s.FetchIndex(md, IndexTransaction); !errors.Is(err, ErrRemoteNotFound) {
		t.Fatalf("missing txn index: %v, want ErrRemoteNotFound", err)
	}
	if err := s.DeleteLogSegmentData(md); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.List("cluster-a/"); err != nil || len(keys) != 0 {
		t.Fatalf("after delete: %q, %v", keys, err)
	}
	if err := s.DeleteLogSegmentData(md); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
}

// TestS3DeleteAbortsUnfinishedUpload: a multipart upload left in progress
// (a broker killed mid-copy) is aborted by DeleteLogSegmentData, so that
// the store keeps no parts of it.
func TestS3DeleteAbortsUnfinishedUpload(t *testing.T) {
	srv := s3test.Start(t)
	s := newTestS3(t, srv, 0)
	md := SegmentMetadata{Partition: TopicIDPartition{TopicID: UUID{4}, Topic: "t", Partition: 0}, SegmentID: UUID{5}, StartOffset: 0}
	key := s.ObjectKey(md, "log")
	ctx := context.Background()
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("tiered"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, s3MinPartSize)
	if _, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("tiered"), Key: &key, UploadId: created.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part)))}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLogSegmentData(md); err != nil {
		t.Fatal(err)
	}
	out, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("tiered")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 0 {
		t.Fatalf("%d uploads left in progress", len(out.Uploads))
	}
}

// TestS3StoreDown: with the store paused (SIGSTOP), a copy and a read fail
// with ErrRemoteStorage within the call timeout instead of hanging, and
// succeed once the store is back.
func TestS3StoreDown(t *testing.T) {
	srv := s3test.Start(t)
	s := newTestS3(t, srv, 0)
	s.cfg.CallTimeout = 1500e6 // 1.5s
	dir := t.TempDir()
	md := SegmentMetadata{Partition: TopicIDPartition{TopicID: UUID{6}, Topic: "t", Partition: 0}, SegmentID: UUID{7}, SizeInBytes: 10}
	data := LogSegmentData{Log: writeFile(t, filepath.Join(dir, "l"), []byte("0123456789")), LogBytes: 10}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	err := s.CopyLogSegmentData(md, data)
	if !errors.Is(err, ErrRemoteStorage) {
		srv.Resume()
		t.Fatalf("copy with the store down: %v, want ErrRemoteStorage", err)
	}
	if _, err := s.FetchIndex(md, IndexOffset); !errors.Is(err, ErrRemoteStorage) {
		srv.Resume()
		t.Fatalf("fetch with the store down: %v, want ErrRemoteStorage", err)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	s.cfg.CallTimeout = 30e9
	if err := s.DeleteLogSegmentData(md); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyLogSegmentData(md, data); err != nil {
		t.Fatal(err)
	}
	rc, err := s.FetchLogSegment(md, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "3456789" {
		t.Fatalf("read %q", got)
	}
}

// TestS3DeleteOrphans: DeleteOrphans deletes the partition's objects and
// uploads whose segment keep does not name, and nothing else: not the kept
// segment's, not another partition's.
func TestS3DeleteOrphans(t *testing.T) {
	srv := s3test.Start(t)
	s := newTestS3(t, srv, 0)
	tp := TopicIDPartition{TopicID: UUID{8}, Topic: "t", Partition: 0}
	other := TopicIDPartition{TopicID: UUID{8}, Topic: "t", Partition: 1}
	kept := SegmentMetadata{Partition: tp, SegmentID: UUID{1}, StartOffset: 0}
	orphan := SegmentMetadata{Partition: tp, SegmentID: UUID{2}, StartOffset: 0}
	elsewhere := SegmentMetadata{Partition: other, SegmentID: UUID{3}, StartOffset: 0}
	for _, md := range []SegmentMetadata{kept, orphan, elsewhere} {
		for _, suffix := range []string{"index", "log"} {
			if err := s.put(s.ObjectKey(md, suffix), bytes.NewReader([]byte("x")), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	key := s.ObjectKey(orphan, "timeindex")
	if _, err := s.client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("tiered"), Key: &key}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteOrphans(tp, func(id UUID) bool { return id == kept.SegmentID })
	if err != nil || n != 3 {
		t.Fatalf("deleted %d, %v; want the orphan's 2 objects and its upload", n, err)
	}
	keys, err := s.List("cluster-a/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{s.ObjectKey(kept, "index"), s.ObjectKey(kept, "log"), s.ObjectKey(elsewhere, "index"), s.ObjectKey(elsewhere, "log")}
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("left %q, want %q", keys, want)
	}
	if ups, err := s.Uploads("cluster-a/"); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left %q, %v", ups, err)
	}
}
