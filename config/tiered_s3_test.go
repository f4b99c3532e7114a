package config

import "testing"

// TestRemoteStorageS3Keys: the S3 backend's rsm.config.* keys are kept as
// given for the backend, described by DescribeConfigs, and the secret
// access key is described without its value.
func TestRemoteStorageS3Keys(t *testing.T) {
	c := Default()
	for k, v := range map[string]string{
		"remote.log.storage.backend":                      "s3",
		"rsm.config.storage.s3.bucket.name":               "tier",
		"rsm.config.storage.aws.secret.access.key":        "hush",
		"rsm.config.storage.s3.path.style.access.enabled": "true",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if c.RemoteLogStorageBackend != "s3" || c.RemoteStorageProperties["rsm.config.storage.aws.secret.access.key"] != "hush" ||
		c.RemoteStorageProperties["rsm.config.storage.s3.bucket.name"] != "tier" {
		t.Fatalf("backend %q, properties %v", c.RemoteLogStorageBackend, c.RemoteStorageProperties)
	}
	k, _ := Lookup("rsm.config.storage.aws.secret.access.key")
	if v, src := c.Describe(k); v != nil || src != SourceStaticBroker {
		t.Fatalf("secret described as %v (%v), want null and STATIC_BROKER_CONFIG", v, src)
	}
	k, _ = Lookup("rsm.config.storage.s3.bucket.name")
	if v, _ := c.Describe(k); v == nil || *v != "tier" {
		t.Fatalf("bucket described as %v", v)
	}
	if err := c.Set("remote.log.storage.backend", "gcs"); err == nil {
		t.Fatal("remote.log.storage.backend=gcs accepted")
	}
	if err := c.Set("rsm.config.storage.s3.multipart.upload.part.size", "1024"); err == nil {
		t.Fatal("a part size below S3's 5 MiB accepted")
	}
}
