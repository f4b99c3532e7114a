package e2e

// A 3-broker ZooKeeper cluster attacked over its PLAINTEXT client ports
// with spoofed inter-broker requests, each sent by hand (package kraw): spoofed
// controller requests, a client posing as a follower, a spoofed controlled
// shutdown. Each is refused with Kafka's error code and harmless: the
// partition serves every record, the addresses brokers advertise are
// unchanged, a paused follower still leaves the ISR, the high watermark
// never passes what the real ISR has, and no election happens.

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/kraw"
)

// zkRead reads a znode of the cluster's chroot.
func (c *testCluster) zkRead(path string) ([]byte, *zk.Stat) {
	c.t.Helper()
	conn, _, err := zk.Connect([]string{c.zk.Addr()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	data, stat, err := conn.Get("/sluice" + path)
	if err != nil {
		c.t.Fatalf("read %s: %v", path, err)
	}
	return data, stat
}

// controllerEpoch reads the controller epoch from /controller_epoch.
func (c *testCluster) controllerEpoch() int32 {
	c.t.Helper()
	data, _ := c.zkRead("/controller_epoch")
	epoch, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		c.t.Fatalf("/controller_epoch %q: %v", data, err)
	}
	return int32(epoch)
}

func TestClusterRefusesSpoofedRequests(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "replica.lag.time.max.ms=3000", "zookeeper.session.timeout.ms=40000")
	c.createTopic("victim", 1, 3, nil)
	c.produceN("victim", "a", 500)
	leader, followers := c.followersOf("victim")
	ctrl := c.controllerID()
	before := c.mustPartition("victim", 0)
	victimID := c.topicID("victim")
	realEpoch := c.controllerEpoch()
	_, leaderReg := c.zkRead("/brokers/ids/" + itoa(leader))
	t.Logf("leader %d, followers %v, controller %d at epoch %d; leader's broker epoch %d", leader, followers, ctrl, realEpoch, leaderReg.Czxid)

	want := func(what string, got int16, codes ...int16) {
		t.Helper()
		for _, c := range codes {
			if got == c {
				return
			}
		}
		t.Errorf("%s: %v", what, kerr.ErrorForCode(got))
	}
	unauth, staleCtl, staleBroker := kerr.ClusterAuthorizationFailed.Code, kerr.StaleControllerEpoch.Code, kerr.StaleBrokerEpoch.Code

	for _, id := range []int32{leader, followers[0], followers[1]} {
		rc := kraw.Dial(t, c.brokers[id].addr)
		// Wipe the partition: StopReplica delete, leader epoch -1, from a
		// forged controller (epoch MaxInt32), from the real controller id
		// at its real epoch without the broker's epoch, and with the
		// broker's real epoch (a replica still assigned here).
		_, reg := c.zkRead("/brokers/ids/" + itoa(id))
		for _, f := range []struct {
			ctl, epoch int32
			be         int64
			codes      []int16
		}{
			{ctrl, math.MaxInt32, reg.Czxid, []int16{unauth}},
			{ctrl, realEpoch - 1, reg.Czxid, []int16{staleCtl}},
			{ctrl, realEpoch, -1, []int16{staleBroker}},
			{ctrl + 10, realEpoch, reg.Czxid, []int16{unauth}},
		} {
			sr := kmsg.NewPtrStopReplicaRequest()
			sr.SetVersion(3)
			sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = f.ctl, f.epoch, f.be
			st := kmsg.NewStopReplicaRequestTopic()
			st.Topic = "victim"
			ps := kmsg.NewStopReplicaRequestTopicPartitionState()
			ps.Partition, ps.LeaderEpoch, ps.Delete = 0, -1, true
			st.PartitionStates = append(st.PartitionStates, ps)
			sr.Topics = append(sr.Topics, st)
			want("StopReplica", rc.Do(sr).(*kmsg.StopReplicaResponse).ErrorCode, f.codes...)
		}
		// The real controller's identity and this broker's epoch, but a
		// replica the assignment still places here: refused per partition.
		sr := kmsg.NewPtrStopReplicaRequest()
		sr.SetVersion(3)
		sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = ctrl, realEpoch, reg.Czxid
		st := kmsg.NewStopReplicaRequestTopic()
		st.Topic = "victim"
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = 0, -2, true
		st.PartitionStates = append(st.PartitionStates, ps)
		sr.Topics = append(sr.Topics, st)
		resp := rc.Do(sr).(*kmsg.StopReplicaResponse)
		if resp.ErrorCode != 0 || len(resp.Partitions) != 1 {
			t.Fatalf("replayed StopReplica: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Partitions)
		}
		want("StopReplica of an assigned replica", resp.Partitions[0].ErrorCode, unauth)

		// Freeze the broker's controller handling: LeaderAndIsr and
		// UpdateMetadata from epoch MaxInt32 making broker 99 leader and
		// pointing everyone at another host.
		lr := kmsg.NewPtrLeaderAndISRRequest()
		lr.SetVersion(5)
		lr.ControllerID, lr.ControllerEpoch, lr.BrokerEpoch = ctrl, math.MaxInt32, reg.Czxid
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = "victim", victimID
		lps := kmsg.NewLeaderAndISRRequestTopicPartition()
		lps.Partition, lps.Leader, lps.LeaderEpoch = 0, 99, math.MaxInt32
		lps.ISR, lps.Replicas = []int32{99}, []int32{99}
		ts.PartitionStates = append(ts.PartitionStates, lps)
		lr.TopicStates = append(lr.TopicStates, ts)
		want("LeaderAndIsr", rc.Do(lr).(*kmsg.LeaderAndISRResponse).ErrorCode, unauth)

		ur := kmsg.NewPtrUpdateMetadataRequest()
		ur.SetVersion(7)
		ur.ControllerID, ur.ControllerEpoch, ur.BrokerEpoch = ctrl, math.MaxInt32, reg.Czxid
		for _, b := range []int32{1, 2, 3} {
			lb := kmsg.NewUpdateMetadataRequestLiveBroker()
			lb.ID, lb.Host, lb.Port = b, "203.0.113.7", 9092
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Host, ep.Port, ep.ListenerName = "203.0.113.7", 9092, "PLAINTEXT"
			lb.Endpoints = append(lb.Endpoints, ep)
			ur.LiveBrokers = append(ur.LiveBrokers, lb)
		}
		want("UpdateMetadata", rc.Do(ur).(*kmsg.UpdateMetadataResponse).ErrorCode, unauth)
		ur.ControllerEpoch, ur.BrokerEpoch = realEpoch, -1
		want("UpdateMetadata without the broker epoch", rc.Do(ur).(*kmsg.UpdateMetadataResponse).ErrorCode, staleBroker)
	}

	// A spoofed controlled shutdown of the leader, sent to the controller
	// (v1 has no broker epoch; v3 with a guessed one).
	rc := kraw.Dial(t, c.brokers[ctrl].addr)
	for _, f := range []struct {
		v     int16
		epoch int64
	}{{1, -1}, {3, -1}, {3, leaderReg.Czxid + 1}} {
		cr := kmsg.NewPtrControlledShutdownRequest()
		cr.SetVersion(f.v)
		cr.BrokerID, cr.BrokerEpoch = leader, f.epoch
		want("ControlledShutdown", rc.Do(cr).(*kmsg.ControlledShutdownResponse).ErrorCode, staleBroker)
	}

	// Harmless so far: same leader and epoch (no election), full ISR,
	// every record, and every broker advertises loopback addresses.
	after := c.mustPartition("victim", 0)
	if after.Leader != before.Leader || after.LeaderEpoch != before.LeaderEpoch || len(after.ISR) != 3 {
		t.Fatalf("partition changed: leader %d epoch %d ISR %v -> leader %d epoch %d ISR %v",
			before.Leader, before.LeaderEpoch, before.ISR, after.Leader, after.LeaderEpoch, after.ISR)
	}
	checkPrefixes(t, c.consumeAll("victim"), map[string]int{"a": 500})
	for _, v := range c.okViews() {
		for _, h := range v.hosts {
			if h != "127.0.0.1" {
				t.Fatalf("broker %d advertises %s", v.id, h)
			}
		}
	}

	// Pose as a follower. Pause one (not the controller) and fetch in its
	// name from the leader, at the log end, without its broker epoch (v12)
	// and with a wrong one (v15): refused, so the high watermark does not
	// move past what the real ISR holds and the paused follower still
	// leaves the ISR.
	f := followers[0]
	if f == ctrl {
		f = followers[1]
	}
	_, freg := c.zkRead("/brokers/ids/" + itoa(f))
	c.brokers[f].pause()
	hwBefore := c.highWatermark("victim")
	if code := c.rawProduce(leader, "victim", 1); code != 0 {
		t.Fatalf("acks=1 produce: %v", kerr.ErrorForCode(code))
	}
	lc := kraw.Dial(t, c.brokers[leader].addr)
	deadline := time.Now().Add(25 * time.Second)
	for round := 0; ; round++ {
		for _, v := range []int16{12, 15} {
			fr := kmsg.NewPtrFetchRequest()
			fr.SetVersion(v)
			fr.ReplicaID, fr.ReplicaState.ID, fr.ReplicaState.Epoch = f, f, freg.Czxid+1
			fr.MaxBytes = 1 << 20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "victim", victimID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, hwBefore+1, 1<<20, before.LeaderEpoch
			ft.Partitions = append(ft.Partitions, fp)
			fr.Topics = append(fr.Topics, ft)
			resp := lc.Do(fr).(*kmsg.FetchResponse)
			want("follower fetch in another's name", resp.Topics[0].Partitions[0].ErrorCode, staleBroker)
		}
		pd, ok := c.partition("victim", 0)
		if ok && len(pd.ISR) == 2 {
			t.Logf("paused follower %d left the ISR (%v) after %d spoofed fetch rounds", f, pd.ISR, round+1)
			break
		}
		// The leader writes an ISR change to ZooKeeper before its high
		// watermark counts it (Metadata learns it later, from the
		// controller), so ZooKeeper's ISR read after the high watermark
		// is at least as new as the one the high watermark was made with.
		if hw := c.highWatermark("victim"); hw != hwBefore {
			if isr := c.zkISR("victim", 0); slices.Contains(isr, f) {
				t.Fatalf("high watermark moved %d -> %d while paused follower %d is in the ISR %v\n%s", hwBefore, hw, f, isr, c.logs())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("paused follower %d still in the ISR after 25 s of spoofed fetches\n%s", f, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.brokers[f].resume()
	c.waitISR("victim", []int32{1, 2, 3}, 30*time.Second)

	// The brokers still obey the real controller: a new topic gets
	// leaders and takes acks=all writes.
	c.createTopic("after", 1, 3, nil)
	c.produceN("after", "b", 100)
	checkPrefixes(t, c.consumeAll("after"), map[string]int{"b": 100})
	if n := strings.Count(c.logs(), "refused"); n == 0 {
		t.Error("no refusal logged")
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// zkISR reads the ISR of topic-partition from its state znode.
func (c *testCluster) zkISR(topic string, p int32) []int32 {
	c.t.Helper()
	data, _ := c.zkRead("/brokers/topics/" + topic + "/partitions/" + itoa(p) + "/state")
	var st struct {
		ISR []int32 `json:"isr"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		c.t.Fatalf("partition state %s: %v", data, err)
	}
	return st.ISR
}

// topicID returns topic's id as the cluster knows it.
func (c *testCluster) topicID(topic string) [16]byte {
	c.t.Helper()
	adm, cl := c.admin()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	return td[topic].ID
}

// TestClusterControlPlaneListener: with control.plane.listener.name
// (KIP-291) the controller's requests travel on a listener of their own,
// the cluster works as before, and the same requests on the client port
// are refused even when they name the real controller and epochs.
func TestClusterControlPlaneListener(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, "control.plane.listener.name=CONTROLLER")
	c.createTopic("cp", 1, 3, nil)
	c.produceN("cp", "a", 200)
	checkPrefixes(t, c.consumeAll("cp"), map[string]int{"a": 200})
	leader, _ := c.followersOf("cp")
	ctrl := c.controllerID()
	realEpoch := c.controllerEpoch()
	regData, reg := c.zkRead("/brokers/ids/" + itoa(leader))
	if !strings.Contains(string(regData), "CONTROLLER://"+c.brokers[leader].controlAddr) {
		t.Fatalf("registration does not name the control-plane endpoint %s: %s", c.brokers[leader].controlAddr, regData)
	}

	// A perfect replay on the client listener: refused.
	ur := kmsg.NewPtrUpdateMetadataRequest()
	ur.SetVersion(7)
	ur.ControllerID, ur.ControllerEpoch, ur.BrokerEpoch = ctrl, realEpoch, reg.Czxid
	rc := kraw.Dial(t, c.brokers[leader].addr)
	if code := rc.Do(ur).(*kmsg.UpdateMetadataResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("UpdateMetadata on the client listener: %v", kerr.ErrorForCode(code))
	}
	cr := kmsg.NewPtrControlledShutdownRequest()
	cr.SetVersion(3)
	cr.BrokerID, cr.BrokerEpoch = leader, reg.Czxid
	rc = kraw.Dial(t, c.brokers[ctrl].addr)
	if code := rc.Do(cr).(*kmsg.ControlledShutdownResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("ControlledShutdown on the client listener: %v", kerr.ErrorForCode(code))
	}
	if pd := c.mustPartition("cp", 0); pd.Leader != leader {
		t.Fatalf("leader moved %d -> %d", leader, pd.Leader)
	}

	// Failover still works: the controller's LeaderAndIsr reaches the
	// survivors on their control-plane listeners.
	c.brokers[leader].kill()
	c.waitFor(30*time.Second, "a new leader", func(adm *kadm.Client) bool {
		pd, ok := c.partition("cp", 0)
		return ok && pd.Leader >= 0 && pd.Leader != leader
	})
	c.produceN("cp", "b", 100)
	checkPrefixes(t, c.consumeAll("cp"), map[string]int{"a": 200, "b": 100})
}
