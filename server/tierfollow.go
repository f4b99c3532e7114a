package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replication"
)

// A follower below the leader's local log start of a tiered partition
// (KIP-405): the leader answers its fetch OFFSET_MOVED_TO_TIERED_STORAGE
// (movedToTiered) and the follower rebuilds its log from the remote tier
// (replication/tierstate.go, over remoteLogAux).

// errOffsetMovedToTieredStorage is OFFSET_MOVED_TO_TIERED_STORAGE.
var errOffsetMovedToTieredStorage = errors.New("server: offset moved to tiered storage")

// movedToTiered turns a follower fetch's OFFSET_OUT_OF_RANGE (err) into
// OFFSET_MOVED_TO_TIERED_STORAGE when the offset lies below the leader's
// local log start but not below the log start of a tiered partition, as
// Kafka's ReplicaManager.readFromLog answers a follower (consumers are
// served from the remote tier instead: fetchTiered). The log start the
// partition keeps (replication.Partition.LogStart) is enough, as in Kafka:
// the remote log metadata view of a broker that just restarted may not
// show what is remote yet.
func (s *Server) movedToTiered(ft *fetchTarget, err error) error {
	if s.tiered == nil || !errors.Is(err, engine.ErrOffsetOutOfRange) {
		return err
	}
	t := s.rm.Topic(ft.p.Topic())
	if t == nil || !s.tiered.TopicTiering(t).Enable {
		return err
	}
	local, start := ft.p.LogStartOffset(), ft.p.LogStart()
	if ts, _, serr := s.remoteLogStart(ft.p); serr == nil && ts < start {
		start = ts // a log start lost with a damaged checkpoint (tiered.Manager.LogStart)
	}
	if ft.offset >= local || ft.offset < start {
		return err
	}
	return fmt.Errorf("%w: %s-%d offset %d, remote log start %d, local log start %d", errOffsetMovedToTieredStorage, ft.p.Topic(), ft.p.Index(), ft.offset, start, local)
}

// remoteLogAux is the follower fetchers' way to the remote tier
// (replication.FetcherOptions.RemoteLog).
type remoteLogAux struct{ s *Server }

func (a remoteLogAux) RemoteAuxState(ctx context.Context, topic string, partition int32, localStart int64) (replication.RemoteAuxState, error) {
	if a.s.tiered == nil {
		return replication.RemoteAuxState{}, fmt.Errorf("server: tiered storage is off on this broker (remote.log.storage.system.enable=false)")
	}
	return a.s.tiered.RemoteAuxState(ctx, topic, partition, localStart)
}
