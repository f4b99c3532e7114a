package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 is the RemoteStorageManager of an S3-compatible object store (AWS S3,
// and stores that speak its API: endpoint URL, path-style access). Object
// layout, one object per file of a segment, named as the local-directory
// backend and Aiven's plugin name them:
//
//	<rsm.config.key.prefix><topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>.<suffix>
//
// (suffixes log, index, timeindex, txnindex, snapshot,
// leader_epoch_checkpoint; docs/tiered-storage.md). An S3 object is never
// torn: a PutObject or a CompleteMultipartUpload makes it appear whole or
// not at all. The .log object is written last, and a segment is read only
// once its metadata says COPY_SEGMENT_FINISHED, after every object is in
// place.
//
// A segment's log larger than the part size is uploaded as a multipart
// upload, part after part, each part read from the file through an
// io.SectionReader: nothing of a segment is held in memory, and a failed
// attempt is retried by re-reading the part from the file. A multipart
// upload cut short (an error, a crash) is aborted by DeleteLogSegmentData,
// which the remote log manager calls for every copy that did not finish.
//
// Each call (a PutObject, a part, a GetObject) is bounded by
// rsm.config.storage.s3.api.call.timeout and retried by the SDK's standard
// retryer (3 attempts, exponential backoff with jitter, no client-side
// retry quota: a store that was down for a minute is not then refused
// retries); the remote log manager retries a failed copy at its next runs
// with its own backoff (retry.go). Reads are ranged GETs whose body the
// reader streams: memory is what the fetch keeps.
//
// Safe for concurrent use.
type S3 struct {
	cfg    S3Config
	client *s3.Client
}

// NewS3 returns the backend of c. It does not contact the store: a store
// down at start fails the first copy or read, which is retried.
func NewS3(c S3Config) (*S3, error) {
	ctx := context.Background()
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(c.Region),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.RateLimiter = ratelimit.None
				o.MaxBackoff = 5 * time.Second
			})
		}),
	}
	if c.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tiered: s3 config: %w", err)
	}
	client := s3.NewFromConfig(ac, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// S3-compatible stores differ in their support of the newer
		// flexible checksums; send them only where the API requires them.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3{cfg: c, client: client}, nil
}

// partitionKey is the key prefix of a partition's objects.
func (s *S3) partitionKey(tp TopicIDPartition) string {
	return s.cfg.KeyPrefix + tp.Topic + "-" + tp.TopicID.String() + "/" + strconv.Itoa(int(tp.Partition)) + "/"
}

// ObjectKey returns the key of one object of a segment.
func (s *S3) ObjectKey(md SegmentMetadata, suffix string) string {
	return s.partitionKey(md.Partition) + objectPrefix(md) + suffix
}

// s3Error classifies an SDK error: a missing key wraps
// ErrRemoteNotFound, everything else ErrRemoteStorage.
func s3Error(op, key string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var ae smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) || (errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")) {
		return fmt.Errorf("%w: s3 %s %s", ErrRemoteNotFound, op, key)
	}
	return fmt.Errorf("%w: s3 %s %s: %v", ErrRemoteStorage, op, key, err)
}

func (s *S3) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.CallTimeout)
}

// CopyLogSegmentData implements RemoteStorageManager.
func (s *S3) CopyLogSegmentData(md SegmentMetadata, data LogSegmentData) error {
	small := []struct {
		suffix string
		src    string
		bytes  []byte
	}{
		{suffix: suffixes[IndexOffset], src: data.OffsetIndex},
		{suffix: suffixes[IndexTimestamp], src: data.TimeIndex},
		{suffix: suffixes[IndexLeaderEpoch], bytes: data.LeaderEpochs},
	}
	if data.TxnIndex != "" {
		small = append(small, struct {
			suffix string
			src    string
			bytes  []byte
		}{suffix: suffixes[IndexTransaction], src: data.TxnIndex})
	}
	if data.ProducerSnapshot != "" {
		small = append(small, struct {
			suffix string
			src    string
			bytes  []byte
		}{suffix: suffixes[IndexProducerSnapshot], src: data.ProducerSnapshot})
	}
	for _, o := range small {
		key := s.ObjectKey(md, o.suffix)
		if o.src == "" {
			if err := s.put(key, bytes.NewReader(o.bytes), int64(len(o.bytes))); err != nil {
				return err
			}
			continue
		}
		if err := s.putFile(key, o.src, -1); err != nil {
			return err
		}
	}
	// The log last: a reader that finds it finds the indexes.
	return s.putFile(s.ObjectKey(md, "log"), data.Log, data.LogBytes)
}

// putFile uploads the first n bytes of the file at path (n < 0: all of it)
// to key: one PutObject up to the part size, a multipart upload past it.
func (s *S3) putFile(key, path string, n int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRemoteStorage, err)
	}
	if n < 0 {
		n = fi.Size()
	}
	if fi.Size() < n {
		return fmt.Errorf("%w: %s: %d bytes, want %d", ErrRemoteStorage, path, fi.Size(), n)
	}
	if n <= s.cfg.PartSize {
		return s.put(key, io.NewSectionReader(f, 0, n), n)
	}
	return s.multipart(key, f, n)
}

// put uploads body (n bytes, seekable so that a retry re-reads it) as one
// PutObject.
func (s *S3) put(key string, body io.ReadSeeker, n int64) error {
	ctx, cancel := s.callCtx()
	defer cancel()
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.cfg.Bucket,
		Key:           &key,
		Body:          body,
		ContentLength: aws.Int64(n),
	})
	if err != nil {
		return s3Error("PutObject", key, err)
	}
	return nil
}

// partSize returns the part size for an object of n bytes: the configured
// one, grown so that the object fits in S3's 10,000 parts.
func partSize(configured, n int64) int64 {
	if need := (n + s3MaxParts - 1) / s3MaxParts; need > configured {
		return need
	}
	return configured
}

// multipart uploads the first n bytes of f to key as a multipart upload,
// aborted when a part fails.
func (s *S3) multipart(key string, f *os.File, n int64) (err error) {
	ctx, cancel := s.callCtx()
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: &key})
	cancel()
	if err != nil {
		return s3Error("CreateMultipartUpload", key, err)
	}
	id := created.UploadId
	defer func() {
		if err != nil {
			ctx, cancel := s.callCtx()
			defer cancel()
			// Best effort: DeleteLogSegmentData aborts what is left.
			s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: &key, UploadId: id})
		}
	}()
	size := partSize(s.cfg.PartSize, n)
	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < n; off, num = off+size, num+1 {
		ln := min(size, n-off)
		ctx, cancel := s.callCtx()
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket:        &s.cfg.Bucket,
			Key:           &key,
			UploadId:      id,
			PartNumber:    aws.Int32(num),
			Body:          io.NewSectionReader(f, off, ln),
			ContentLength: aws.Int64(ln),
		})
		cancel()
		if err != nil {
			return s3Error(fmt.Sprintf("UploadPart %d", num), key, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	}
	ctx, cancel = s.callCtx()
	defer cancel()
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &s.cfg.Bucket,
		Key:             &key,
		UploadId:        id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return s3Error("CompleteMultipartUpload", key, err)
	}
	return nil
}

// cancelBody closes the body and releases the call's context.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// get returns the body of key from byte from on (a ranged GET, to the
// end of the object when to < 0, else to byte to inclusive). The call's
// timeout covers reading the body too: the caller reads what it needs and
// closes.
func (s *S3) get(key string, from, to int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key}
	switch {
	case to >= 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", from, to))
	case from > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", from))
	}
	ctx, cancel := s.callCtx()
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		cancel()
		return nil, s3Error("GetObject", key, err)
	}
	return &cancelBody{ReadCloser: out.Body, cancel: cancel}, nil
}

// FetchLogSegment implements RemoteStorageManager: a ranged GET from
// startPos to the segment's end (md.SizeInBytes).
func (s *S3) FetchLogSegment(md SegmentMetadata, startPos int64) (io.ReadCloser, error) {
	if startPos >= md.SizeInBytes {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	return s.get(s.ObjectKey(md, "log"), startPos, md.SizeInBytes-1)
}

// FetchIndex implements RemoteStorageManager.
func (s *S3) FetchIndex(md SegmentMetadata, t IndexType) (io.ReadCloser, error) {
	suffix, ok := suffixes[t]
	if !ok {
		return nil, fmt.Errorf("tiered: index type %d", t)
	}
	return s.get(s.ObjectKey(md, suffix), 0, -1)
}

// DeleteLogSegmentData implements RemoteStorageManager: every object under
// the segment's key prefix is deleted and every multipart upload under it
// aborted (what a copy cut short leaves).
func (s *S3) DeleteLogSegmentData(md SegmentMetadata) error {
	prefix := s.partitionKey(md.Partition) + objectPrefix(md)
	keys, err := s.List(prefix)
	if err != nil {
		return err
	}
	for _, key := range keys {
		ctx, cancel := s.callCtx()
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: aws.String(key)})
		cancel()
		if err != nil {
			if err := s3Error("DeleteObject", key, err); !errors.Is(err, ErrRemoteNotFound) {
				return err
			}
		}
	}
	return s.abortUploads(prefix)
}

// List returns the keys of the bucket's objects under prefix.
func (s *S3) List(prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		ctx, cancel := s.callCtx()
		page, err := p.NextPage(ctx)
		cancel()
		if err != nil {
			return nil, s3Error("ListObjectsV2", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// DeleteOrphans implements OrphanDeleter: every object and multipart
// upload under the partition's prefix whose segment id keep does not name
// is deleted (aborted).
func (s *S3) DeleteOrphans(tp TopicIDPartition, keep func(UUID) bool) (int, error) {
	prefix := s.partitionKey(tp)
	keys, err := s.List(prefix)
	if err != nil {
		return 0, err
	}
	orphan := func(key string) bool {
		id, ok := segmentIDOf(key[len(prefix):])
		return ok && !keep(id)
	}
	n := 0
	for _, key := range keys {
		if !orphan(key) {
			continue
		}
		ctx, cancel := s.callCtx()
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: aws.String(key)})
		cancel()
		if err != nil {
			return n, s3Error("DeleteObject", key, err)
		}
		n++
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &s.cfg.Bucket, Prefix: aws.String(prefix)}
	for {
		ctx, cancel := s.callCtx()
		out, err := s.client.ListMultipartUploads(ctx, in)
		cancel()
		if err != nil {
			return n, s3Error("ListMultipartUploads", prefix, err)
		}
		for _, u := range out.Uploads {
			if !orphan(aws.ToString(u.Key)) {
				continue
			}
			ctx, cancel := s.callCtx()
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: u.Key, UploadId: u.UploadId})
			cancel()
			if err != nil && !isNoSuchUpload(err) {
				return n, s3Error("AbortMultipartUpload", aws.ToString(u.Key), err)
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Uploads returns the keys of the multipart uploads in progress under
// prefix.
func (s *S3) Uploads(prefix string) ([]string, error) {
	var keys []string
	in := &s3.ListMultipartUploadsInput{Bucket: &s.cfg.Bucket, Prefix: aws.String(prefix)}
	for {
		ctx, cancel := s.callCtx()
		out, err := s.client.ListMultipartUploads(ctx, in)
		cancel()
		if err != nil {
			return nil, s3Error("ListMultipartUploads", prefix, err)
		}
		for _, u := range out.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// abortUploads aborts the multipart uploads in progress under prefix.
func (s *S3) abortUploads(prefix string) error {
	in := &s3.ListMultipartUploadsInput{Bucket: &s.cfg.Bucket, Prefix: aws.String(prefix)}
	for {
		ctx, cancel := s.callCtx()
		out, err := s.client.ListMultipartUploads(ctx, in)
		cancel()
		if err != nil {
			return s3Error("ListMultipartUploads", prefix, err)
		}
		for _, u := range out.Uploads {
			ctx, cancel := s.callCtx()
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: u.Key, UploadId: u.UploadId})
			cancel()
			if err != nil && !isNoSuchUpload(err) {
				return s3Error("AbortMultipartUpload", aws.ToString(u.Key), err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

func isNoSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	var ae smithy.APIError
	return errors.As(err, &nsu) || (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload")
}

// CreateBucket creates the configured bucket (for tests and development
// stores; an existing bucket is not an error).
func (s *S3) CreateBucket() error {
	ctx, cancel := s.callCtx()
	defer cancel()
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.cfg.Bucket})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return s3Error("CreateBucket", s.cfg.Bucket, err)
	}
	return nil
}
