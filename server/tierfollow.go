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
// local log start but not below the remote log start of a tiered
// partition, as Kafka's ReplicaManager.readFromLog answers a follower
// (consumers are served from the remote tier instead: fetchTiered).
func (s *Server) movedToTiered(ft *fetchTarget, err error) error {
	if s.tiered == nil || !errors.Is(err, engine.ErrOffsetOutOfRange) {
		return err
	}
	start, local, serr := s.remoteLogStart(ft.p)
	if serr != nil || ft.offset >= local || ft.offset < start {
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
