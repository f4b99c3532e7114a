package server

// Per-group configs (KIP-848 GroupConfig, Kafka 3.8+): a GROUP config
// resource (type 32) holds consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms for one group (package config,
// groupconfig.go). IncrementalAlterConfigs and AlterConfigs set them,
// authorized by AlterConfigs on the group; DescribeConfigs shows them,
// authorized by DescribeConfigs on the group (else
// GROUP_AUTHORIZATION_FAILED, as Kafka). The consumer group coordinator
// reads them on every heartbeat (group.Options.ConsumerGroupTimeouts):
// the heartbeat interval a member is told and the session timeout after
// which a silent member is removed.
//
// Storage: in a cluster, ZooKeeper's /config/groups/<sanitized group>
// with Kafka-style change notifications (cluster/groupconfigs.go, a layout
// Sluice chose: Kafka keeps group configs only in KRaft metadata), which
// every broker's watch follows (groupConfigLoop); on a single node, the
// metastore (checkpoint "config/groups/<group>", the same JSON). Each
// broker caches what it read per group; a notification drops that group's
// entry and a resync drops them all, so the next heartbeat reads again.
// A group's configs outlive the group, as in Kafka 4.0.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
)

// resourceGroup is ConfigResource GROUP.
const resourceGroup = kmsg.ConfigResourceType(32)

// sourceGroupConfig is ConfigSource DYNAMIC_GROUP_CONFIG (Kafka 3.8+).
const sourceGroupConfig = kmsg.ConfigSource(8)

// groupConfigs is the broker's view of the per-group configs.
type groupConfigs struct {
	store entityConfigStore
	// alterMu serializes the alters' read-modify-write.
	alterMu sync.Mutex
	mu      sync.Mutex
	// cache holds each group's configs as last read (empty: none set):
	// one entry per consumer group that heartbeat here (or was altered
	// here) since the last resync. Entries are replaced, never modified.
	// REQUIRES: mu held.
	cache map[string]map[string]string
}

// groupConfig returns group's stored configs (read-only), from the cache or the
// store. A store that cannot be read gives none (the broker's values),
// logged, and is asked again next time.
func (s *Server) groupConfig(group string) map[string]string {
	gc := &s.groupCfg
	gc.mu.Lock()
	props, ok := gc.cache[group]
	gc.mu.Unlock()
	if ok {
		return props
	}
	props, err := gc.store.get(group)
	if err != nil {
		s.log.Warn("server: read group configs; using the broker's", "group", group, "err", err)
		return nil
	}
	gc.mu.Lock()
	if gc.cache == nil {
		gc.cache = map[string]map[string]string{}
	}
	gc.cache[group] = props
	gc.mu.Unlock()
	return props
}

// forgetGroupConfig drops group's cached configs (a change was notified);
// all of them when all.
func (s *Server) forgetGroupConfig(group string, all bool) {
	s.groupCfg.mu.Lock()
	defer s.groupCfg.mu.Unlock()
	if all {
		s.groupCfg.cache = nil
		return
	}
	delete(s.groupCfg.cache, group)
}

// consumerGroupTimeouts is group.Options.ConsumerGroupTimeouts: the
// group's session timeout and heartbeat interval, its own or the
// broker's.
func (s *Server) consumerGroupTimeouts(group string) (session, heartbeat time.Duration) {
	t := s.currentConfig().GroupTimeouts(s.groupConfig(group))
	return t.Session, t.Heartbeat
}

// alterGroupConfigs serves one GROUP resource of AlterConfigs or
// IncrementalAlterConfigs: next turns the stored configs (a copy, never
// nil) into the new ones, which are checked as Kafka's GroupConfig.validate
// does (INVALID_CONFIG with Kafka's message) and, unless validateOnly,
// stored, announced and applied from the group's next heartbeat.
func (s *Server) alterGroupConfigs(group string, validateOnly bool, next func(cur map[string]string) (map[string]string, error)) error {
	if group == "" {
		return fmt.Errorf("%w: Group name must not be empty", errInvalidRequest)
	}
	gc := &s.groupCfg
	gc.alterMu.Lock()
	defer gc.alterMu.Unlock()
	cur, err := gc.store.get(group)
	if err != nil {
		return err
	}
	props, err := next(maps.Clone(cur))
	if err != nil {
		return err
	}
	if err := s.currentConfig().CheckGroupConfigs(props); err != nil {
		return fmt.Errorf("%w: %s", errInvalidConfig, strings.TrimPrefix(err.Error(), config.ErrGroupConfig.Error()+": "))
	}
	if validateOnly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), configWriteTimeout)
	defer cancel()
	if err := gc.store.set(ctx, group, props); err != nil {
		return err
	}
	gc.mu.Lock()
	if gc.cache == nil {
		gc.cache = map[string]map[string]string{}
	}
	gc.cache[group] = maps.Clone(props)
	gc.mu.Unlock()
	return nil
}

// describeGroupConfigs describes a GROUP resource as Kafka's
// ConfigHelper.createGroupConfigEntry: every per-group key with its
// effective value; the source is DYNAMIC_GROUP_CONFIG when the group sets
// it, else its broker synonym's (STATIC_BROKER_CONFIG or DEFAULT_CONFIG);
// synonyms list the group's value, then the broker key's. Any group name
// may be described (a group without configs shows the broker's values);
// the empty name is INVALID_REQUEST.
func (s *Server) describeGroupConfigs(r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	if rr.ResourceName == "" {
		return fmt.Errorf("%w: Group name must not be empty", errInvalidRequest)
	}
	props, err := s.groupCfg.store.get(rr.ResourceName)
	if err != nil {
		return err
	}
	cur := s.currentConfig()
	for _, k := range config.GroupKeys() {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, k.Name) {
			continue
		}
		v, set := cur.GroupValue(props, k)
		var syns []config.Synonym
		if set {
			syns = append(syns, config.Synonym{Name: k.Name, Value: &v, Source: config.Source(sourceGroupConfig)})
		}
		if bk, ok := config.Lookup(k.Synonym); ok {
			syns = append(syns, cur.Synonyms(bk, true)...)
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = k.Name, &v
		c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
		if len(syns) > 0 {
			c.Source = kmsg.ConfigSource(syns[0].Source)
		}
		c.IsDefault = c.Source == kmsg.ConfigSource(config.SourceDefaultConfig)
		c.ConfigType = kmsg.ConfigType(k.Type)
		if r.IncludeDocumentation {
			doc := k.Doc
			c.Documentation = &doc
		}
		if r.IncludeSynonyms {
			c.ConfigSynonyms = appendSynonyms(c.ConfigSynonyms, syns)
		}
		sr.Configs = append(sr.Configs, c)
	}
	return nil
}

// incrementalAlterGroupConfigs serves a GROUP resource of
// IncrementalAlterConfigs: SET and DELETE; APPEND and SUBTRACT are
// INVALID_CONFIG (no per-group key is a list, as Kafka's controller
// answers); a config named twice or a null value for SET is
// INVALID_REQUEST (ConfigAdminManager.preprocess).
func (s *Server) incrementalAlterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if err := checkIncrementalOps(rr.Configs); err != nil {
		return err
	}
	return s.alterGroupConfigs(rr.ResourceName, validateOnly, func(props map[string]string) (map[string]string, error) {
		return applyIncrementalOps(props, rr.Configs, func(_ map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
			if _, ok := config.LookupGroupKey(c.Name); !ok {
				return fmt.Errorf("%w: Unknown group config name: %s", errInvalidConfig, c.Name)
			}
			verb := "APPEND"
			if c.Op == opSubtract {
				verb = "SUBTRACT"
			}
			return fmt.Errorf("%w: Can't %s to key %s because its type is not LIST.", errInvalidConfig, verb, c.Name)
		})
	})
}

// alterGroupConfigsLegacy serves a GROUP resource of AlterConfigs: the
// given configs replace the group's; a config named twice or with a null
// value is INVALID_REQUEST, as for a broker (ConfigAdminManager).
func (s *Server) alterGroupConfigsLegacy(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	nulls := make([]bool, len(rr.Configs))
	for i, c := range rr.Configs {
		names[i], nulls[i] = c.Name, c.Value == nil
	}
	if err := checkConfigNames(names, nulls, func(int) bool { return false }); err != nil {
		return err
	}
	return s.alterGroupConfigs(rr.ResourceName, validateOnly, func(map[string]string) (map[string]string, error) {
		return alterConfigsOverrides(rr), nil
	})
}

// groupConfigLoop drops the cached configs of each group whose change is
// notified through ZooKeeper, until close (cluster mode).
func (zp *zkPlane) groupConfigLoop() {
	defer zp.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-zp.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	zp.node.WatchGroupConfigChanges(ctx, func(group string) { zp.s.forgetGroupConfig(group, false) },
		func() { zp.s.forgetGroupConfig("", true) })
}
