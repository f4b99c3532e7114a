package cluster

// Dynamic broker configs in ZooKeeper, as Kafka's ZooKeeper mode keeps
// them (AdminZkClient.changeBrokerConfig): /config/brokers/<id> holds one
// broker's and /config/brokers/<default> the cluster-wide default, each
// {"version":1,"config":{"key":"value",...}}, and every change is
// announced by /config/changes/config_change_<seq> =
// {"version":2,"entity_path":"brokers/<id or <default>>"}, which every
// broker's watch (WatchBrokerConfigChanges) follows. Which keys may be
// stored and how they apply is package config's and server's concern;
// this file only reads and writes the znodes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// configBrokersPath is /config/brokers.
const configBrokersPath = "/config/brokers"

func brokerConfigPath(entity string) string { return configBrokersPath + "/" + entity }

// BrokerConfig returns the dynamic configs stored for entity (a broker id
// or "<default>"), never nil; an absent znode is an empty config. A znode
// that is not Kafka's JSON is ErrCorruptZnode.
func (n *Node) BrokerConfig(entity string) (map[string]string, error) {
	return n.entityConfig(brokerConfigPath(entity))
}

// SetBrokerConfig replaces the dynamic configs of entity (a broker id or
// <default>; the configs validated by the caller) and announces the change
// to every broker.
func (n *Node) SetBrokerConfig(ctx context.Context, entity string, configs map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := strconv.ParseInt(entity, 10, 32); err != nil && entity != "<default>" {
		return fmt.Errorf("cluster: broker config entity %q is not a broker id or <default>", entity)
	}
	if err := n.setEntityConfig(brokerConfigPath(entity), configs); err != nil {
		return err
	}
	// Written as Kafka writes it: encoding/json would escape <default>'s
	// angle brackets. The entity is an id or <default>: nothing to escape.
	return n.announceConfigChange([]byte(`{"version":2,"entity_path":"brokers/` + entity + `"}`))
}

// entityConfig reads the config znode p, Kafka's {"version":1,"config":
// {...}} as topics have it, never nil; an absent znode is an empty config,
// one that is not that JSON ErrCorruptZnode.
func (n *Node) entityConfig(p string) (map[string]string, error) {
	data, _, err := n.zk.get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", p, err)
	}
	var tc topicConfig
	if err := json.Unmarshal(data, &tc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, p, err)
	}
	if tc.Config == nil {
		tc.Config = map[string]string{}
	}
	return tc.Config, nil
}

// setEntityConfig writes configs to the config znode p, creating it and
// its parents when missing.
func (n *Node) setEntityConfig(p string, configs map[string]string) error {
	data := encodeTopicConfig(maps.Clone(configs))
	if _, err := n.zk.set(p, data, -1); errors.Is(err, zk.ErrNoNode) {
		if _, err := n.zk.createParents(p, data, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("cluster: write %s: %w", p, err)
		}
	} else if err != nil {
		return fmt.Errorf("cluster: write %s: %w", p, err)
	}
	return nil
}

// announceConfigChange writes a /config/changes notification.
func (n *Node) announceConfigChange(note []byte) error {
	if _, err := n.zk.createParents(configChangesPath+"/"+configChangePrefix, note, zk.FlagSequence); err != nil {
		return fmt.Errorf("cluster: config change notification: %w", err)
	}
	return nil
}

// SetUncleanLeaderElection changes unclean.leader.election.enable as this
// node's controller applies it from its next election on (a dynamic broker
// config changed it). Safe for concurrent use.
func (n *Node) SetUncleanLeaderElection(on bool) { n.unclean.Store(on) }
