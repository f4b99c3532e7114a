package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// metaPropertiesFile is Kafka's log-dir identity file. In ZooKeeper mode
// (version 0) it holds:
//
//	version=0
//	broker.id=<id>
//	cluster.id=<id>
//
// Like Kafka, a broker refuses a log dir whose meta.properties names another
// broker or cluster: that dir belongs to someone else.
const metaPropertiesFile = "meta.properties"

// errWrongBroker: a log dir's meta.properties names another broker.
var errWrongBroker = errors.New("broker: log dir belongs to another broker")

// readMetaProperties reads dir/meta.properties (nil when absent) and checks
// its broker.id against brokerID; its cluster.id is checked by
// localClusterID and, in cluster mode, against /cluster/id.
func readMetaProperties(dir string, brokerID int32) (map[string]string, error) {
	path := filepath.Join(dir, metaPropertiesFile)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: read %s: %w", path, err)
	}
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v, ok := props["broker.id"]; ok && v != strconv.Itoa(int(brokerID)) {
		return nil, fmt.Errorf("%w: %s says broker.id=%s but the config says %d", errWrongBroker, path, v, brokerID)
	}
	return props, nil
}

// writeMetaProperties writes the file via a temp file, fsync, rename and a
// directory fsync, so a crash leaves either no file or a whole one.
func writeMetaProperties(dir string, brokerID int32, clusterID string) error {
	path := filepath.Join(dir, metaPropertiesFile)
	content := fmt.Sprintf("#\n#Written by Sluice\nversion=0\nbroker.id=%d\ncluster.id=%s\n", brokerID, clusterID)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("broker: write %s: %w", tmp, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("broker: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("broker: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("broker: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("broker: rename %s: %w", tmp, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("broker: sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("broker: sync dir %s: %w", dir, err)
	}
	return nil
}
