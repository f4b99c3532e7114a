package config

import (
	"errors"
	"strings"
	"testing"
)

// TestTieredStorageKeys: Kafka's defaults; rsm.config.* kept as given; the
// local-directory root defaults beside the first log dir; tiering refused
// on a backend other than segment and in cluster mode.
func TestTieredStorageKeys(t *testing.T) {
	c := Default()
	if c.RemoteLogStorageSystemEnable || c.LogLocalRetentionMs != -2 || c.LogLocalRetentionBytes != -2 ||
		c.RemoteLogManagerTaskInterval.Milliseconds() != 30000 || c.RemoteLogReaderThreads != 10 ||
		c.RemoteFetchMaxWait.Milliseconds() != 500 || c.RemoteLogIndexCacheBytes != 1<<30 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err := Load("", []string{"remote.log.storage.system.enable=true", "log.dirs=/var/sluice/data/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteStorageDir(); got != "/var/sluice/data-remote" {
		t.Fatalf("default remote dir %q", got)
	}
	c, err = Load("", []string{"remote.log.storage.system.enable=true", "rsm.config.dir=/r", "rsm.config.other=x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteStorageDir() != "/r" || c.RemoteStorageProperties["rsm.config.other"] != "x" {
		t.Fatalf("rsm.config.*: %v", c.RemoteStorageProperties)
	}
	for _, bad := range [][]string{
		{"remote.log.storage.system.enable=true", "storage.backend=pebble"},
	} {
		_, err := Load("", bad)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "remote.log.storage.system.enable") {
			t.Errorf("%v: %v, want a remote.log.storage.system.enable error", bad, err)
		}
	}
	// Cluster mode tiers too (__remote_log_metadata, tiered/topicmeta.go).
	if _, err := Load("", []string{"remote.log.storage.system.enable=true", "zookeeper.connect=127.0.0.1:2181"}); err != nil {
		t.Errorf("tiering in cluster mode: %v", err)
	}
	if _, err := Load("", []string{"storage.backend=pebble"}); err != nil {
		t.Errorf("pebble without tiering: %v", err)
	}
}
