package cluster

// Topic config changes. SetTopicConfig writes /config/topics/<t> and then a
// sequential notification /config/changes/config_change_<seq> holding
// {"version":2,"entity_path":"topics/<t>"}, as Kafka's AdminZkClient does.
// Every broker watches /config/changes (Kafka's ZkConfigManager) and
// re-reads the config of each topic named by a notification newer than the
// last one it handled. Like Kafka's ZkNodeChangeNotificationListener, each
// broker deletes the notifications it has handled once they are older than
// Options.ConfigChangeExpiration (15 minutes): by then every live broker has
// seen them, and one that was down re-reads every config it hosts anyway.
// The watch itself is changes.go's, shared with the ACL notifications.
// User configs (SCRAM credentials, scram.go) are announced the same way,
// with entity path users/<sanitized user>; WatchUserConfigChanges follows
// them. Dynamic broker configs (brokerconfigs.go) too, with entity path
// brokers/<id> or brokers/<default>; WatchBrokerConfigChanges follows them.
// Group configs (groupconfigs.go) too, with entity path
// groups/<sanitized group>; WatchGroupConfigChanges follows them.

import (
	"context"
	"strings"
)

// WatchTopicConfigChanges calls fn with the topic name of every config
// change notification created after its first listing of
// /config/changes, in sequence order, until ctx ends or the node closes.
// resync (may be nil) is called once, right after that first listing: a
// change made before it (while the broker was down, or before the watch
// began) is not notified, so the caller re-reads the configs it holds
// there. It blocks: run it on its own
// goroutine. fn runs on that goroutine, one call at a time; it should
// re-read the topic's config (TopicConfigs), since a notification only
// names what changed. The watch survives disconnects and session expiry
// (it lists again); a notification written while the watch was broken is
// still seen, since each listing handles every sequence number above the
// last one handled, and resync runs again after a broken watch in case
// other brokers purged notifications meanwhile, and at once after a
// notification that could not be read (for a reason other than its
// purge), since what it announced is unknown.
func (n *Node) WatchTopicConfigChanges(ctx context.Context, fn func(topic string), resync func()) {
	n.watchConfigChanges(ctx, "topics", fn, resync)
}

// WatchUserConfigChanges is WatchTopicConfigChanges for the notifications
// of user configs (entity path users/<sanitized user>, written with SCRAM
// credentials, see ScramStore): fn gets the user name, desanitized. It
// lists /config/changes on its own, beside a topic watch.
func (n *Node) WatchUserConfigChanges(ctx context.Context, fn func(user string), resync func()) {
	n.watchConfigChanges(ctx, "users", func(name string) {
		user, err := desanitizeUser(name)
		if err != nil {
			n.log.Warn("cluster: user config change names a user that is not URL-encoded", "name", name, "err", err)
			return
		}
		fn(user)
	}, resync)
}

// WatchBrokerConfigChanges is WatchTopicConfigChanges for the
// notifications of dynamic broker configs (entity path brokers/<id> or
// brokers/<default>, written by SetBrokerConfig): fn gets the entity. It
// lists /config/changes on its own, beside the other watches.
func (n *Node) WatchBrokerConfigChanges(ctx context.Context, fn func(entity string), resync func()) {
	n.watchConfigChanges(ctx, "brokers", fn, resync)
}

// watchConfigChanges runs the watch of WatchTopicConfigChanges, calling fn
// with the name of each notification whose entity path is
// <entityType>/<name> (name without a further '/').
func (n *Node) watchConfigChanges(ctx context.Context, entityType string, fn func(name string), resync func()) {
	w := changeWatch{
		dir:         configChangesPath,
		prefix:      configChangePrefix,
		last:        -1,
		resyncFirst: true,
		handle: func(znode string, data []byte) error {
			name, ok, err := parseEntityChange(data, entityType)
			if err != nil {
				n.log.Warn("cluster: bad config change notification", "znode", znode, "err", err)
				return nil
			}
			if ok {
				fn(name)
			}
			return nil
		},
	}
	if resync != nil {
		w.resync = func() error { resync(); return nil }
	}
	n.watchChanges(ctx, w)
}

// configChangeNote is a /config/changes notification (version 2).
type configChangeNote struct {
	Version    int    `json:"version"`
	EntityPath string `json:"entity_path"`
}

// parseConfigChange returns the topic whose config a /config/changes
// notification says changed; ok is false when it names another kind of
// entity (or no topic). An error means it is not JSON.
func parseConfigChange(data []byte) (topic string, ok bool, err error) {
	return parseEntityChange(data, "topics")
}

// parseEntityChange returns the name in a notification whose entity path
// is <entityType>/<name>; ok is false for any other entity (another type,
// or a nested one such as users/<u>/clients/<c>).
func parseEntityChange(data []byte, entityType string) (name string, ok bool, err error) {
	var cn configChangeNote
	if err := jsonUnmarshal(data, &cn); err != nil {
		return "", false, err
	}
	name, ok = strings.CutPrefix(cn.EntityPath, entityType+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false, nil
	}
	return name, true, nil
}
