package server

// Topic configs in cluster mode. ZooKeeper's /config/topics/<t> is the
// truth: DescribeConfigs reads it (any broker answers for any topic, whether
// or not it holds a replica), AlterConfigs and IncrementalAlterConfigs
// compute the new overrides from it and write them with
// Node.SetTopicConfig, which also writes a /config/changes notification.
//
// Every broker applies a change to its local replicas (logs, partitions,
// metastore) when it sees the notification: configLoop runs
// Node.WatchTopicConfigChanges (Kafka's ZkConfigManager), re-reads the
// named topic's config and applies it if it differs from what the local
// topic holds. A broker reads a topic's config afresh when it first hosts
// the topic after a start (localTopic); when the watch starts it re-reads
// every local topic, closing the gap between those reads and its first
// listing. The broker that
// served the alter applies it at once, so its own next request sees it.
//
// Two concurrent alters of one topic through different brokers are not
// serialized (as in Kafka's ZooKeeper mode): the last write wins.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/cluster"
)

// configWriteTimeout bounds the ZooKeeper write of an alter.
const configWriteTimeout = 10 * time.Second

// configLoop applies topic config changes notified through ZooKeeper until
// cm.stop closes.
func (cm *clusterMode) configLoop() {
	defer cm.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-cm.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cm.node.WatchTopicConfigChanges(ctx, cm.applyTopicConfig, cm.resyncTopicConfigs)
}

// applyTopicConfig re-reads topic name's config from ZooKeeper and applies
// it to the local replicas.
func (cm *clusterMode) applyTopicConfig(name string) {
	cm.s.topics.admin.Lock()
	defer cm.s.topics.admin.Unlock()
	cm.applyTopicConfigLocked(name)
}

// resyncTopicConfigs re-reads the config of every local topic.
func (cm *clusterMode) resyncTopicConfigs() {
	for _, t := range cm.s.topics.all() {
		cm.applyTopicConfig(t.name)
	}
}

// applyTopicConfigLocked applies topic name's overrides in ZooKeeper to its
// local entry, logs and partitions, when they differ from the local ones.
// A topic with no replica here has nothing to apply. Failures are logged:
// the next change or restart applies the config again.
// REQUIRES: s.topics.admin held.
func (cm *clusterMode) applyTopicConfigLocked(name string) {
	s := cm.s
	t := s.topics.get(name)
	if t == nil {
		return
	}
	configs, err := cm.node.TopicConfigs(name)
	if err != nil {
		if !errors.Is(err, cluster.ErrTopicNotFound) {
			cm.log.Warn("server: read topic config from zookeeper", "topic", name, "err", err)
		}
		return
	}
	if maps.Equal(configs, t.meta.Configs) {
		return
	}
	if cerr := checkTopicConfigs(configs); cerr != nil {
		cm.log.Warn("server: topic config in zookeeper not valid here; using broker defaults for bad keys", "topic", name, "err", cerr)
	}
	m := t.meta
	m.Configs = configs
	if err := s.meta.PutTopic(m); err != nil {
		cm.log.Error("server: store topic configs", "topic", name, "err", err)
		return
	}
	nt := *t
	nt.meta = m
	nt.cfg = s.effectiveConfig(configs)
	for _, p := range nt.parts {
		if p == nil {
			continue // no replica of this partition here
		}
		if err := p.Log().SetConfig(nt.cfg.log); err != nil {
			cm.log.Error("server: apply topic configs", "topic", name, "partition", p.index, "err", err)
		}
		p.SetLogAppendTime(nt.cfg.logAppendTime)
		p.SetRules(nt.cfg.rules)
		p.SetMinInsyncReplicas(nt.cfg.minISR)
	}
	s.topics.publish(&nt)
	cm.log.Info("server: applied topic configs", "topic", name, "configs", configs)
}

// topicConfigs returns topic name's overrides from ZooKeeper for
// DescribeConfigs: UNKNOWN_TOPIC_OR_PARTITION for a topic the cluster does
// not have.
func (cm *clusterMode) topicConfigs(name string) (map[string]string, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	return cm.node.TopicConfigs(name)
}

// alterTopicConfigs serves one resource of AlterConfigs or
// IncrementalAlterConfigs: next turns the current overrides (a copy, never
// nil) into the new ones, which are validated as a whole and, unless
// validateOnly, written to ZooKeeper and applied here.
// REQUIRES: s.topics.admin held.
func (cm *clusterMode) alterTopicConfigs(typ kmsg.ConfigResourceType, name string, validateOnly bool, next func(cur map[string]string) (map[string]string, error)) error {
	if typ != resourceTopic {
		_, err := cm.s.alterTarget(typ, name) // the resource type's error
		return err
	}
	cur, err := cm.topicConfigs(name)
	if err != nil {
		return err
	}
	cur = maps.Clone(cur)
	if cur == nil {
		cur = map[string]string{}
	}
	overrides, err := next(cur)
	if err != nil {
		return err
	}
	if err := checkTopicConfigs(overrides); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), configWriteTimeout)
	defer cancel()
	if err := cm.node.SetTopicConfig(ctx, name, overrides); err != nil {
		return fmt.Errorf("server: write configs of %q: %w", name, err)
	}
	cm.log.Info("server: changed topic configs", "topic", name, "configs", overrides)
	cm.applyTopicConfigLocked(name)
	return nil
}
