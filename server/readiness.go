package server

// Readiness: what /readyz (package console, wired by the broker) needs to
// know from the server: the partitions this broker should lead but cannot
// serve, the log dirs that failed, and the group coordinator's loading.

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice/sluice/cluster"

	"github.com/sluice/sluice/offsets"
)

// Readiness is a snapshot of what keeps the server from serving all it
// should. The zero value is ready.
type Readiness struct {
	// Leading is the number of partitions the cluster says this broker
	// leads.
	Leading int
	// Offline names ("topic-partition") the partitions this broker should
	// lead that have no open local replica, or whose replica does not yet
	// act as leader (its log failed to open, or LeaderAndIsr has not been
	// applied), or whose log has failed since (a storage error); at most
	// 20, with OfflineCount the full count.
	Offline      []string
	OfflineCount int
	// GroupsLoading names how many __consumer_offsets partitions led here
	// are still loading (both modes: a single node leads them all); empty
	// when loaded. A failed load is retried, and counts as loading
	// meanwhile, so GroupsLoadErr is never set by the server.
	GroupsLoading string
	GroupsLoadErr error
	// OfflineLogDirs names the dirs of log.dirs that failed (an I/O
	// error, or missing at start), each "<path>: <error>"; the broker
	// serves the partitions of the others.
	OfflineLogDirs []string
}

// Readiness reports what is not ready. Safe for concurrent use; it reads
// the control plane's view and the local partitions without blocking on
// them for long.
func (s *Server) Readiness() Readiness {
	var rd Readiness
	for _, name := range s.md.topicNames() {
		for _, pi := range s.md.partitions(name) {
			if pi.Leader != s.nodeID {
				continue
			}
			rd.Leading++
			if p := s.rm.Partition(name, pi.Partition); p == nil || !p.IsLeader() || p.Failure() != nil {
				rd.OfflineCount++
				if len(rd.Offline) < 20 {
					rd.Offline = append(rd.Offline, fmt.Sprintf("%s-%d", name, pi.Partition))
				}
			}
		}
	}
	loading := 0
	if t := s.rm.Topic(offsets.Topic); t != nil {
		for i, p := range t.Parts {
			if p != nil && p.IsLeader() && s.offsetsPartitionLoading(int32(i)) {
				loading++
			}
		}
	}
	paths, errs := s.rm.OfflineLogDirs()
	for i, p := range paths {
		rd.OfflineLogDirs = append(rd.OfflineLogDirs, fmt.Sprintf("%s: %v", p, errs[i]))
	}
	if loading > 0 {
		rd.GroupsLoading = fmt.Sprintf("%d %s partitions led here are loading", loading, offsets.Topic)
	}
	return rd
}

// logDirFailed returns replica.Options.OnLogDirFailure: in a cluster the
// controller is told through ZooKeeper (Kafka's
// /log_dir_event_notification), in the background since the manager calls
// it holding its admin lock; nil on a single node, where there is no one
// to move leadership to.
func (s *Server) logDirFailed(node *cluster.Node) func(dir string) {
	if node == nil {
		return nil
	}
	return func(dir string) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := node.NotifyLogDirFailure(ctx); err != nil {
				s.log.Error("server: could not tell the controller of a failed log dir", "dir", dir, "err", err)
			}
		}()
	}
}
