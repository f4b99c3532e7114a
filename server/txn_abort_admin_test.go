package server

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

// clusterActionSwitch allows everything, and ClusterAction on the cluster
// only while allow is set.
type clusterActionSwitch struct{ allow atomic.Bool }

func (a *clusterActionSwitch) Authorize(_ string, _ netip.Addr, op acl.Operation, rt acl.ResourceType, _ string) bool {
	if rt == acl.ResourceCluster && op == acl.OpClusterAction {
		return a.allow.Load()
	}
	return true
}

// TestSingleNodeClientAbortsHangingTxn: a transactional batch written with
// no coordinator involvement pins the LSO; a client's WriteTxnMarkers ABORT
// (Admin.abortTransaction, kafka-transactions.sh abort) releases it on a
// single node when the client is allowed ClusterAction, and is refused
// with CLUSTER_AUTHORIZATION_FAILED otherwise.
func TestSingleNodeClientAbortsHangingTxn(t *testing.T) {
	t.Parallel() // waits on session and request timers, not the CPU
	for _, withAuthorizer := range []bool{false, true} {
		name := "no authorizer"
		if withAuthorizer {
			name = "authorizer"
		}
		t.Run(name, func(t *testing.T) {
			auth := &clusterActionSwitch{}
			opts := Options{ClusterID: "txn", AdvertisedHost: "127.0.0.1"}
			if withAuthorizer {
				opts.Authorizer = auth
			}
			s := newTestServer(t, nil, opts)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s.advPort = int32(ln.Addr().(*net.TCPAddr).Port)
			s.self.Port = s.advPort
			go s.Serve(ln)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "hang"); err != nil {
				t.Fatal(err)
			}
			c, open := txnProduce(t, ctx, cl, "hang", 4000, 2, 0, true, "h0", "h1")
			if c != 0 {
				t.Fatalf("transactional produce: %v", kerr.ErrorForCode(c))
			}
			if c, _ := txnProduce(t, ctx, cl, "hang", -1, -1, -1, false, "p0"); c != 0 {
				t.Fatalf("plain produce: %v", kerr.ErrorForCode(c))
			}
			lso := func() int64 {
				t.Helper()
				req := kmsg.NewPtrListOffsetsRequest()
				req.SetVersion(5)
				req.IsolationLevel = 1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "hang"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				return resp.Topics[0].Partitions[0].Offset
			}
			if got := lso(); got != open {
				t.Fatalf("LSO with the hanging transaction: %d, want %d", got, open)
			}
			abort := func() int16 {
				t.Helper()
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				req.SetVersion(1)
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 4000, 2, false, -1
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = "hang", []int32{0}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					t.Fatal(err)
				}
				return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
			}
			if withAuthorizer {
				if c := abort(); c != kerr.ClusterAuthorizationFailed.Code {
					t.Fatalf("abort without ClusterAction: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
				}
				if got := lso(); got != open {
					t.Fatalf("LSO after a refused abort: %d, want %d", got, open)
				}
				auth.allow.Store(true)
			}
			if c := abort(); c != 0 {
				t.Fatalf("abort: %v", kerr.ErrorForCode(c))
			}
			if got := lso(); got != open+4 {
				t.Fatalf("LSO after the abort: %d, want %d (the log end)", got, open+4)
			}
			if got := consume(t, ctx, ln.Addr().String(), "hang", true, 1); len(got) != 1 || got[0] != "p0" {
				t.Fatalf("read_committed after the abort: %v, want [p0]", got)
			}
		})
	}
}
