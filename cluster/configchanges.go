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
// User configs (SCRAM credentials, scram.go) are announced the same way,
// with entity path users/<sanitized user>; WatchUserConfigChanges follows
// them.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
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

// watchConfigChanges runs the watch of WatchTopicConfigChanges, calling fn
// with the name of each notification whose entity path is
// <entityType>/<name> (name without a further '/').
func (n *Node) watchConfigChanges(ctx context.Context, entityType string, fn func(name string), resync func()) {
	last := int64(-1) // highest sequence handled; -1 before the first listing
	first := true
	broken := false // a listing failed since the last one that worked
	for ctx.Err() == nil && n.ctx.Err() == nil {
		names, ch, err := n.zk.childrenW(configChangesPath)
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
				return
			}
			broken = true
			n.log.Warn("cluster: watch config changes; retrying", "err", err)
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
			case <-n.ctx.Done():
			}
			continue
		}
		type note struct {
			seq  int64
			name string
		}
		var notes []note
		for _, c := range names {
			if seq, ok := configChangeSeq(c); ok {
				notes = append(notes, note{seq, c})
			}
		}
		slices.SortFunc(notes, func(a, b note) int { return cmp.Compare(a.seq, b.seq) })
		if first {
			first = false
			if len(notes) > 0 {
				last = notes[len(notes)-1].seq
			}
			notes = nil
			if resync != nil {
				resync()
			}
		} else if broken && resync != nil {
			// While the watch was broken, other brokers may have purged
			// notifications this one never handled (after
			// ConfigChangeExpiration): re-read everything, then handle
			// the notifications still there as usual.
			resync()
		}
		broken = false
		for _, nt := range notes {
			if nt.seq <= last {
				continue
			}
			last = nt.seq
			data, _, err := n.zk.get(configChangesPath + "/" + nt.name)
			if errors.Is(err, zk.ErrNoNode) {
				continue // purged
			}
			if err != nil {
				// The change it announces is unknown (a user deleted, a
				// credential replaced): re-read everything.
				n.log.Warn("cluster: read config change; resyncing", "znode", nt.name, "err", err)
				broken = true
				continue
			}
			name, ok, err := parseEntityChange(data, entityType)
			if err != nil {
				n.log.Warn("cluster: bad config change notification", "znode", nt.name, "err", err)
				continue
			}
			if ok {
				fn(name)
			}
		}
		n.purgeConfigChanges(names, last)
		if broken {
			continue // list again and resync now, not at the next change
		}
		select {
		case <-ch:
		case <-ctx.Done():
		case <-n.ctx.Done():
		}
	}
}

// purgeConfigChanges deletes the notifications among names with a
// sequence number up to last (handled) that were created more than
// ConfigChangeExpiration before the newest one. Ages are ZooKeeper's ctimes
// on both sides, so a broker's clock skew does not matter; the purge runs
// when a new notification arrives, so "the newest" is about now. Another
// broker deleting one first is fine.
func (n *Node) purgeConfigChanges(names []string, last int64) {
	type old struct {
		name string
		st   *zk.Stat
	}
	var handled []old
	var newest int64
	for _, c := range names {
		seq, ok := configChangeSeq(c)
		if !ok {
			continue
		}
		ok, st, err := n.zk.conn.Exists(n.zk.p(configChangesPath + "/" + c))
		if err != nil || !ok {
			continue
		}
		newest = max(newest, st.Ctime)
		if seq <= last {
			handled = append(handled, old{c, st})
		}
	}
	cutoff := newest - n.opts.ConfigChangeExpiration.Milliseconds()
	for _, h := range handled {
		if h.st.Ctime > cutoff {
			continue
		}
		if err := n.zk.delete(configChangesPath+"/"+h.name, h.st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			n.log.Debug("cluster: purge config change", "znode", h.name, "err", err)
		}
	}
}

// configChangeSeq is the sequence number of a /config/changes child named
// config_change_<seq>; ok is false for any other name.
func configChangeSeq(name string) (seq int64, ok bool) {
	s, ok := strings.CutPrefix(name, configChangePrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	return seq, err == nil
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
