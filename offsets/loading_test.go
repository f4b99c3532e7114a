package offsets

import (
	"testing"
	"time"

	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/replication"
)

// TestPartitionStateLoadingUntilInstalled: PartitionState reports a
// partition loading until its groups are installed (Reload returned), so
// the WriteTxnMarkers handler refuses markers (COORDINATOR_LOAD_IN_PROGRESS)
// in the window after the replay's end and before the install, where a
// marker would complete nothing and the pending offsets the load installs
// would never complete.
func TestPartitionStateLoadingUntilInstalled(t *testing.T) {
	p := newReplica(t, 0)
	meta, err := metastore.Open(t.TempDir(), metastore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	inReload, release := make(chan struct{}), make(chan struct{})
	c := New(Options{
		NumPartitions: func() int32 { return 1 },
		Partition:     func(int32) *replication.Partition { return p },
		Unload:        func(func(string) bool) {},
		Reload: func(func(string) bool) error {
			close(inReload)
			<-release
			return nil
		},
		Meta: meta,
	})
	defer c.Close()
	if owned, loading := c.PartitionState(0); owned || loading {
		t.Fatalf("before OnRole: owned %v loading %v", owned, loading)
	}
	c.OnRole(0, true)
	<-inReload // the replay is over, the view not installed yet
	if owned, loading := c.PartitionState(0); !owned || !loading {
		t.Fatalf("between the replay and the install: owned %v loading %v, want loading", owned, loading)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		owned, loading := c.PartitionState(0)
		if owned && !loading {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the install: owned %v loading %v", owned, loading)
		}
		time.Sleep(time.Millisecond)
	}
}
