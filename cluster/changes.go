package cluster

// Change notifications: a directory of persistent sequential znodes
// <prefix><seq>, each announcing that some entity changed, as Kafka's
// ZkNodeChangeNotificationListener follows them. Topic and user configs
// (/config/changes/config_change_<seq>, configchanges.go) and ACLs
// (/kafka-acl-changes/acl_changes_<seq> and the extended directory,
// acls.go) are announced this way. A watcher handles the notifications in
// sequence order, each once, re-reads everything (resync) when it may
// have missed one, and deletes the handled ones once they are older than
// Options.ConfigChangeExpiration.

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

// changeWatch configures Node.watchChanges.
type changeWatch struct {
	dir    string // the notification directory
	prefix string // the name of a notification without its sequence number
	// last is the highest sequence number already handled (-1: none).
	// With resyncFirst, the first listing's highest one replaces it.
	last int64
	// resyncFirst runs resync right after the first listing, whose
	// notifications then count as handled: for a caller that has not read
	// the state yet.
	resyncFirst bool
	// handle is called with the data of each new notification, in
	// sequence order. An error (logged) means the change could not be
	// applied: resync follows at once.
	handle func(znode string, data []byte) error
	// resync re-reads everything the notifications are about; it runs
	// after a broken watch (a failed listing, a lost session), a
	// notification that could not be read or handled, and with
	// resyncFirst. An error (logged) is retried after a pause. nil: none.
	resync func() error
}

// watchChanges lists w.dir and handles its new notifications, then every
// new one, until ctx ends or the node closes. It blocks: run it on its own
// goroutine. The watch survives disconnects and session expiry (it lists
// again, resyncing); a notification written meanwhile is still handled,
// since each listing handles every sequence number above the last one
// handled, and resync covers those other brokers purged meanwhile.
func (n *Node) watchChanges(ctx context.Context, w changeWatch) {
	last := w.last
	first := w.resyncFirst
	broken := false // the notifications may have missed a change since the last resync
	for ctx.Err() == nil && n.ctx.Err() == nil {
		names, ch, err := n.zk.childrenW(w.dir)
		if err == nil {
			if first {
				last = max(last, maxChangeSeq(w.prefix, names))
			}
			if (first || broken) && w.resync != nil {
				err = w.resync()
			}
		}
		if err != nil {
			if ctx.Err() != nil || n.ctx.Err() != nil || errors.Is(err, zk.ErrClosing) {
				return
			}
			broken = true
			n.log.Warn("cluster: watch change notifications; retrying", "dir", w.dir, "err", err)
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
			case <-n.ctx.Done():
			}
			continue
		}
		first, broken = false, false
		type note struct {
			seq  int64
			name string
		}
		var notes []note
		for _, c := range names {
			if seq, ok := changeSeq(w.prefix, c); ok && seq > last {
				notes = append(notes, note{seq, c})
			}
		}
		slices.SortFunc(notes, func(a, b note) int { return cmp.Compare(a.seq, b.seq) })
		for _, nt := range notes {
			last = nt.seq
			znode := w.dir + "/" + nt.name
			data, _, err := n.zk.get(znode)
			if errors.Is(err, zk.ErrNoNode) {
				continue // purged
			}
			if err == nil {
				err = w.handle(znode, data)
			}
			if err != nil {
				// The change it announced is unknown or not applied:
				// re-read everything.
				n.log.Warn("cluster: change notification; resyncing", "znode", znode, "err", err)
				broken = true
			}
		}
		n.purgeChanges(w.dir, w.prefix, names, last)
		if broken {
			continue // list again and resync now, not at the next change
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNotWatching || ev.Err != nil {
				broken = true // the session was lost: so may be notifications
			}
		case <-ctx.Done():
		case <-n.ctx.Done():
		}
	}
}

// purgeChanges deletes the notifications among names (the children of
// dir) with a sequence number up to last (handled) that were created more
// than ConfigChangeExpiration before the newest one. Ages are ZooKeeper's
// ctimes on both sides, so a broker's clock skew does not matter; the
// purge runs when a new notification arrives, so "the newest" is about
// now. Another broker deleting one first is fine.
func (n *Node) purgeChanges(dir, prefix string, names []string, last int64) {
	type old struct {
		name string
		st   *zk.Stat
	}
	var handled []old
	var newest int64
	for _, c := range names {
		seq, ok := changeSeq(prefix, c)
		if !ok {
			continue
		}
		ok, st, err := n.zk.exists(dir + "/" + c)
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
		if err := n.zk.delete(dir+"/"+h.name, h.st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			n.log.Debug("cluster: purge change notification", "znode", dir+"/"+h.name, "err", err)
		}
	}
}

// changeSeq is the sequence number of a notification named
// <prefix><seq>; ok is false for any other name.
func changeSeq(prefix, name string) (seq int64, ok bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	return seq, err == nil
}

// maxChangeSeq is the highest sequence number of the notifications among
// names, -1 for none.
func maxChangeSeq(prefix string, names []string) int64 {
	last := int64(-1)
	for _, c := range names {
		if seq, ok := changeSeq(prefix, c); ok {
			last = max(last, seq)
		}
	}
	return last
}
