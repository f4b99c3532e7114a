package tiered

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/replication"
)

// maxAuxObject bounds what is read of a remote leader-epoch checkpoint or
// producer snapshot.
const maxAuxObject = 64 << 20

// RemoteAuxState implements replication.RemoteLogAux for a follower that
// fell below its leader's local log start localStart (Kafka's
// ReplicaFetcherTierStateMachine.buildRemoteLogAuxState): the finished
// remote segment holding localStart-1, found in the remote log metadata
// this broker replays, gives the offset to restart at (its end + 1), its
// leader-epoch checkpoint and its producer snapshot. Kafka looks the
// segment up by the epoch of localStart-1 as well; the leader's history
// below its local start is cut here (see replication/tierstate.go), so
// when unclean elections left segments of several lineages over that
// offset, the one of the latest epoch is taken, the lineage the leader
// continues. ErrRemoteNotFound: no finished segment holds the offset yet
// (the metadata may lag the leader's; the follower retries).
func (m *Manager) RemoteAuxState(ctx context.Context, topic string, partition int32, localStart int64) (replication.RemoteAuxState, error) {
	var aux replication.RemoteAuxState
	t := m.rm.Topic(topic)
	if t == nil {
		return aux, fmt.Errorf("tiered: %s-%d: no such topic here", topic, partition)
	}
	tp := m.partitionOf(t, partition)
	rs, err := m.remote(tp)
	if err != nil {
		return aux, err
	}
	prev := max(localStart-1, 0)
	var md *SegmentMetadata
	for i := range rs.segs {
		s := &rs.segs[i]
		if s.StartOffset <= prev && prev <= s.EndOffset && (md == nil || lastEpoch(s) > lastEpoch(md)) {
			md = s
		}
	}
	if md == nil {
		return aux, fmt.Errorf("%w: %s: no remote segment holds offset %d (the leader's local log start is %d)", ErrRemoteNotFound, tp, prev, localStart)
	}
	aux.NextOffset = md.EndOffset + 1
	b, err := m.fetchAux(md, IndexLeaderEpoch)
	if err != nil {
		return aux, err
	}
	if aux.Epochs, err = parseEpochCheckpoint(b); err != nil {
		return aux, fmt.Errorf("%w: %s segment %s: leader epoch checkpoint: %v", ErrRemoteStorage, tp, md.SegmentID, err)
	}
	aux.ProducerSnapshot, err = m.fetchAux(md, IndexProducerSnapshot)
	if errors.Is(err, ErrRemoteNotFound) {
		err = nil // no snapshot was copied: no producer state there
	}
	return aux, err
}

func lastEpoch(s *SegmentMetadata) int32 {
	if len(s.LeaderEpochs) == 0 {
		return -1
	}
	return s.LeaderEpochs[len(s.LeaderEpochs)-1].Epoch
}

// fetchAux reads one small index object of md whole.
func (m *Manager) fetchAux(md *SegmentMetadata, it IndexType) ([]byte, error) {
	rc, err := m.rsm.FetchIndex(*md, it)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxAuxObject+1))
	if err != nil {
		return nil, fmt.Errorf("%w: segment %s: %v", ErrRemoteStorage, md.SegmentID, err)
	}
	if len(b) > maxAuxObject {
		return nil, fmt.Errorf("%w: segment %s: index %d larger than %d bytes", ErrRemoteStorage, md.SegmentID, it, maxAuxObject)
	}
	return b, nil
}

// parseEpochCheckpoint parses Kafka's leader-epoch-checkpoint text (what
// epochCheckpoint writes): version 0, the count, then "epoch offset"
// lines.
func parseEpochCheckpoint(b []byte) ([]engine.EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 || lines[0] != "0" {
		return nil, errors.New("not a version 0 checkpoint")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("count %q does not match %d entries", lines[1], len(lines)-2)
	}
	out := make([]engine.EpochEntry, 0, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		out = append(out, engine.EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}
