package server

// DescribeLogDirs (key 35), served v0-v4: the log dir (the first of
// log.dirs, the only one Sluice uses) and the size of each local replica
// in it, with its offset lag (high watermark - log end offset, 0 on a
// leader; Kafka's ReplicaManager.describeLogDirs).
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
	"path/filepath"

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
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.cfg.LogDirs[0]
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	if r.Version >= 4 {
		if total, usable, err := volumeSpace(dir.Dir); err == nil {
			dir.TotalBytes, dir.UsableBytes = total, usable
		}
	}
	for _, t := range s.rm.Topics() {
		if want != nil && want[t.Name] == nil {
			continue
		}
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = t.Name
		for _, p := range t.Parts {
			if p == nil || want != nil && !want[t.Name][p.Index()] {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = p.Index()
			rp.Size = p.Size()
			rp.OffsetLag = max(0, p.HighWatermark()-p.LogEndOffset())
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, rt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return kresp(resp), nil
}
