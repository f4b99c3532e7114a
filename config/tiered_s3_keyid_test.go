package config

import "testing"

// TestRemoteStorageAccessKeyIDSensitive: the S3 access key id is a
// password in Aiven's S3StorageConfig (ConfigDef.Type.PASSWORD, like the
// secret): it reaches the backend but is described without its value,
// as a sensitive key.
func TestRemoteStorageAccessKeyIDSensitive(t *testing.T) {
	c := Default()
	if err := c.Set("rsm.config.storage.aws.access.key.id", "AKIAEXAMPLE"); err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteStorageProperties["rsm.config.storage.aws.access.key.id"]; got != "AKIAEXAMPLE" {
		t.Fatalf("backend property %q", got)
	}
	k, _ := Lookup("rsm.config.storage.aws.access.key.id")
	if !k.Sensitive || k.Type != TypePassword {
		t.Errorf("access key id: sensitive %v, type %v; want a sensitive password as Aiven's", k.Sensitive, k.Type)
	}
	if v, _ := c.Describe(k); v != nil {
		t.Errorf("access key id described as %q, want null", *v)
	}
}
