package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
)

// RemoteStoragePrefix is the prefix of the remote storage manager's own
// keys (Kafka's rsm.config.*), kept as given in
// Config.RemoteStorageProperties: the local-directory backend reads
// rsm.config.dir.
const RemoteStoragePrefix = "rsm.config."

// setRemoteStorageProperty keeps an rsm.config.* key as given.
func (c *Config) setRemoteStorageProperty(key, v string) {
	c.RemoteStorageProperties = maps.Clone(c.RemoteStorageProperties)
	if c.RemoteStorageProperties == nil {
		c.RemoteStorageProperties = map[string]string{}
	}
	c.RemoteStorageProperties[key] = v
}

// checkTieredStorage refuses tiered storage where it cannot run: on a
// backend other than segment (the remote log manager copies segment
// files). In cluster mode the remote log metadata lives in
// __remote_log_metadata (tiered/topicmeta.go).
func (c *Config) checkTieredStorage() error {
	if !c.RemoteLogStorageSystemEnable {
		return nil
	}
	if c.StorageBackend != "segment" {
		return keyError("remote.log.storage.system.enable", "tiered storage needs storage.backend=segment, not %q", c.StorageBackend)
	}
	return nil
}

// RemoteStorageDir is the local-directory remote storage's root:
// rsm.config.dir, or by default the first log dir's path with "-remote"
// appended (./data-remote beside ./data), outside every log dir, so that
// one --set turns tiering on.
func (c *Config) RemoteStorageDir() string {
	if d := c.RemoteStorageProperties[RemoteStoragePrefix+"dir"]; d != "" {
		return d
	}
	return filepath.Clean(c.LogDirs[0]) + "-remote"
}

// rsmKey is the codec of an rsm.config.* key in the table: kept as given in
// RemoteStorageProperties (read by the backend when it opens) and
// described as given; check, when not nil, refuses a malformed value.
func rsmKey(check func(v string) error) codec {
	return codec{set: func(s *setter, key, v string) error {
		if check != nil {
			if err := check(v); err != nil {
				return keyError(key, "%v", err)
			}
		}
		s.c.setRemoteStorageProperty(key, v)
		return nil
	}}
}

func rsmBool(v string) error {
	_, err := strconv.ParseBool(strings.TrimSpace(v))
	return err
}

// rsmInt returns a check of an integer in [lo, hi].
func rsmInt(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is not in [%d, %d]", n, lo, hi)
		}
		return nil
	}
}
