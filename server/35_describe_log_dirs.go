package server

// DescribeLogDirs (key 35), served v0-v4: every dir of log.dirs, in
// order, with the size of each replica in it and its offset lag (Kafka's
// ReplicaManager.describeLogDirs: for a current replica its high
// watermark minus its log end offset, 0 on a leader; for a future replica
// of a move between dirs, IsFuture and how far its log end is behind the
// current replica's). An offline dir is answered KAFKA_STORAGE_ERROR with
// no replicas.
//
//	v1: no change (throttle behaviour)
//	v2: flexible versions
//	v3: top-level error code
//	v4: total and usable bytes of the dir's volume
//
// Needs Describe on the cluster (KafkaApis.handleDescribeLogDirsRequest):
// refused, v3+ answer CLUSTER_AUTHORIZATION_FAILED and older versions an
// empty result. Topics null asks for every local replica; a partition
// with no replica here is left out, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

func handleDescribeLogDirs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.az.allowedCluster(rc, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kresp(resp), nil
	}
	var want map[string]map[int32]bool // nil: every local replica
	if r.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, t := range r.Topics {
			if want[t.Topic] == nil {
				want[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				want[t.Topic][p] = true
			}
		}
	}
	for _, info := range s.rm.LogDirs() {
		dir := kmsg.NewDescribeLogDirsResponseDir()
		dir.Dir = info.Path
		if info.Err != nil {
			dir.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, dir)
			continue
		}
		if r.Version >= 4 {
			if total, usable, err := volumeSpace(dir.Dir); err == nil {
				dir.TotalBytes, dir.UsableBytes = total, usable
			}
		}
		for _, rep := range info.Replicas {
			if want != nil && !want[rep.Topic][rep.Partition] {
				continue
			}
			if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != rep.Topic {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = rep.Topic
				dir.Topics = append(dir.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture = rep.Partition, rep.Size, rep.OffsetLag, rep.IsFuture
			rt := &dir.Topics[len(dir.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	return kresp(resp), nil
}
