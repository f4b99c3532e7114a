package server

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// TestAlterReplicaLogDirsCodes: AlterReplicaLogDirs needs Alter on the
// cluster (every partition CLUSTER_AUTHORIZATION_FAILED without it, as
// KafkaApis answers); granted, a dir not in log.dirs is LOG_DIR_NOT_FOUND,
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION, and a replica already in the
// dir named needs nothing.
func TestAlterReplicaLogDirsCodes(t *testing.T) {
	s, a := newACLServer(t, "t")
	dir, err := filepath.Abs(s.cfg.LogDirs[0])
	if err != nil {
		t.Fatal(err)
	}
	req := func(dir string, topic string) *kmsg.AlterReplicaLogDirsRequest {
		r := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		dt.Topic, dt.Partitions = topic, []int32{0}
		d.Topics = append(d.Topics, dt)
		r.Dirs = append(r.Dirs, d)
		return r
	}
	for _, tc := range []struct {
		name  string
		acls  []acl.Binding
		dir   string
		topic string
		want  int16
	}{
		{"no grant", nil, dir, "t", kerr.ClusterAuthorizationFailed.Code},
		{"describe only", grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpDescribe), dir, "t", kerr.ClusterAuthorizationFailed.Code},
		{"dir not in log.dirs", grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpAlter), "/no/such/dir", "t", kerr.LogDirNotFound.Code},
		{"unknown topic", grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpAlter), dir, "nope", kerr.UnknownTopicOrPartition.Code},
		{"already there", grant(acl.PatternLiteral, acl.ResourceCluster, acl.ClusterName, acl.PermissionAllow, acl.OpAlter), dir, "t", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Load(tc.acls)
			for v := int16(0); v <= 2; v++ {
				resp := mustCall(t, s, v, req(tc.dir, tc.topic)).(*kmsg.AlterReplicaLogDirsResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("v%d: %+v", v, resp)
				}
				if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
					t.Errorf("v%d: %s, want %s", v, code(got), code(tc.want))
				}
			}
		})
	}
}

// TestDescribeLogDirsNamesTheDir: DescribeLogDirs lists the log dir by its
// absolute path with the local replica in it.
func TestDescribeLogDirsNamesTheDir(t *testing.T) {
	s := newTestServer(t, nil, Options{})
	mustCreateTopics(t, s, "t")
	resp := mustCall(t, s, 4, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
	want, _ := filepath.Abs(s.cfg.LogDirs[0])
	if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != want || resp.Dirs[0].ErrorCode != 0 {
		t.Fatalf("dirs %+v, want one: %s", resp.Dirs, want)
	}
	if ts := resp.Dirs[0].Topics; len(ts) != 1 || ts[0].Topic != "t" || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].IsFuture {
		t.Fatalf("topics %+v", ts)
	}
}
