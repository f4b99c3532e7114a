package tiered

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/config"
)

// Keys of the S3 backend under Kafka's rsm.config. prefix, named as Aiven's
// tiered storage plugin names them (its S3Storage), so that an operator's
// plugin config carries over.
const (
	S3KeyBucket          = config.RemoteStoragePrefix + "storage.s3.bucket.name"
	S3KeyRegion          = config.RemoteStoragePrefix + "storage.s3.region"
	S3KeyEndpoint        = config.RemoteStoragePrefix + "storage.s3.endpoint.url"
	S3KeyPathStyle       = config.RemoteStoragePrefix + "storage.s3.path.style.access.enabled"
	S3KeyAccessKeyID     = config.RemoteStoragePrefix + "storage.aws.access.key.id"
	S3KeySecretAccessKey = config.RemoteStoragePrefix + "storage.aws.secret.access.key"
	S3KeyPartSize        = config.RemoteStoragePrefix + "storage.s3.multipart.upload.part.size"
	S3KeyCallTimeout     = config.RemoteStoragePrefix + "storage.s3.api.call.timeout"
	KeyPrefix            = config.RemoteStoragePrefix + "key.prefix"
)

// S3 limits on multipart uploads: parts of 5 MiB to 5 GiB, at most 10,000.
const (
	s3MinPartSize = 5 << 20
	s3MaxPartSize = 5 << 30
	s3MaxParts    = 10000
)

// S3Config is the S3 backend's configuration, read from rsm.config.* by
// S3ConfigOf.
type S3Config struct {
	Bucket    string
	Region    string // default us-east-1
	Endpoint  string // "": AWS's endpoint for Region
	PathStyle bool
	// AccessKeyID and SecretAccessKey: both or neither; neither takes
	// the SDK's default credential chain (environment, shared files, the
	// instance role). The secret is never logged.
	AccessKeyID, SecretAccessKey string
	KeyPrefix                    string
	// PartSize is the size of a multipart upload's parts; an object up
	// to PartSize is one PutObject.
	PartSize int64
	// CallTimeout bounds each call to the store (one PutObject, one part,
	// one GetObject until its headers): a store that stopped answering
	// fails the call with ErrRemoteStorage instead of hanging the copy
	// task.
	CallTimeout time.Duration
}

// String prints the config without the secret.
func (c S3Config) String() string {
	return fmt.Sprintf("s3 bucket=%s region=%s endpoint=%s path_style=%t prefix=%q part_size=%d", c.Bucket, c.Region, c.Endpoint, c.PathStyle, c.KeyPrefix, c.PartSize)
}

// S3ConfigOf reads the S3 backend's keys from props (rsm.config.* as
// given); an error names the key.
func S3ConfigOf(props map[string]string) (S3Config, error) {
	c := S3Config{
		Bucket:          strings.TrimSpace(props[S3KeyBucket]),
		Region:          strings.TrimSpace(props[S3KeyRegion]),
		Endpoint:        strings.TrimSpace(props[S3KeyEndpoint]),
		AccessKeyID:     props[S3KeyAccessKeyID],
		SecretAccessKey: props[S3KeySecretAccessKey],
		KeyPrefix:       props[KeyPrefix],
		PartSize:        25 << 20, // Aiven's default
		CallTimeout:     60 * time.Second,
	}
	if c.Bucket == "" {
		return c, fmt.Errorf("tiered: %s is required with remote.log.storage.backend=s3", S3KeyBucket)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return c, fmt.Errorf("tiered: %s and %s go together", S3KeyAccessKeyID, S3KeySecretAccessKey)
	}
	if v, ok := props[S3KeyPathStyle]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return c, fmt.Errorf("tiered: %s: %q is not a boolean", S3KeyPathStyle, v)
		}
		c.PathStyle = b
	}
	if v, ok := props[S3KeyPartSize]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < s3MinPartSize || n > s3MaxPartSize {
			return c, fmt.Errorf("tiered: %s: %q is not a size from %d to %d bytes", S3KeyPartSize, v, s3MinPartSize, s3MaxPartSize)
		}
		c.PartSize = n
	}
	if v, ok := props[S3KeyCallTimeout]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("tiered: %s: %q is not a positive number of milliseconds", S3KeyCallTimeout, v)
		}
		c.CallTimeout = time.Duration(n) * time.Millisecond
	}
	return c, nil
}

// errUnknownBackend: remote.log.storage.backend names no backend.
var errUnknownBackend = errors.New("tiered: unknown remote.log.storage.backend")

// OpenRemoteStorage opens the remote storage that c configures:
// remote.log.storage.backend=localdir (rsm.config.dir) or s3
// (rsm.config.storage.s3.*).
func OpenRemoteStorage(c *config.Config) (RemoteStorageManager, error) {
	switch c.RemoteLogStorageBackend {
	case "", "localdir":
		return NewLocalDir(c.RemoteStorageDir())
	case "s3":
		sc, err := S3ConfigOf(c.RemoteStorageProperties)
		if err != nil {
			return nil, err
		}
		return NewS3(sc)
	}
	return nil, fmt.Errorf("%w: %q", errUnknownBackend, c.RemoteLogStorageBackend)
}
