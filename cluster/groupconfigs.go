package cluster

// Per-group configs (KIP-848 GroupConfig) in ZooKeeper. Kafka keeps them
// only in KRaft metadata (ConfigResource GROUP); ZooKeeper mode never had
// a group entity, so Sluice chooses the layout of the other entities:
// /config/groups/<sanitized group> holds {"version":1,"config":{...}}
// (the group id sanitized as Kafka's Sanitizer sanitizes a user name,
// since a group id may hold '/'), and every change is announced by
// /config/changes/config_change_<seq> =
// {"version":2,"entity_path":"groups/<sanitized group>"}, which every
// broker's watch (WatchGroupConfigChanges) follows. A Kafka broker in
// ZooKeeper mode ignores that entity type. Which keys may be stored is
// package config's concern; this file only reads and writes the znodes.

import (
	"context"
	"encoding/json"
	"strings"
)

// configGroupsPath is /config/groups.
const configGroupsPath = "/config/groups"

func groupConfigPath(group string) string { return configGroupsPath + "/" + sanitizeGroup(group) }

// sanitizeGroup is sanitizeUser, with the ids "." and ".." (which
// ZooKeeper refuses as a path component) written as %2E and %2E%2E.
func sanitizeGroup(group string) string {
	if group == "." || group == ".." {
		return strings.Repeat("%2E", len(group))
	}
	return sanitizeUser(group)
}

// GroupConfig returns the configs stored for group, never nil; an absent
// znode is an empty config. A znode that is not the JSON above is
// ErrCorruptZnode.
func (n *Node) GroupConfig(group string) (map[string]string, error) {
	return n.entityConfig(groupConfigPath(group))
}

// SetGroupConfig replaces the configs of group (validated by the caller)
// and announces the change to every broker.
func (n *Node) SetGroupConfig(ctx context.Context, group string, configs map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := n.setEntityConfig(groupConfigPath(group), configs); err != nil {
		return err
	}
	note, err := json.Marshal(configChangeNote{Version: 2, EntityPath: "groups/" + sanitizeGroup(group)})
	if err != nil {
		return err
	}
	return n.announceConfigChange(note)
}

// WatchGroupConfigChanges is WatchTopicConfigChanges for the
// notifications of group configs (entity path groups/<sanitized group>,
// written by SetGroupConfig): fn gets the group id, desanitized. It lists
// /config/changes on its own, beside the other watches.
func (n *Node) WatchGroupConfigChanges(ctx context.Context, fn func(group string), resync func()) {
	n.watchConfigChanges(ctx, "groups", func(name string) {
		group, err := desanitizeUser(name)
		if err != nil {
			n.log.Warn("cluster: group config change names a group that is not URL-encoded", "name", name, "err", err)
			return
		}
		fn(group)
	}, resync)
}
