package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/broker/brokertest"
)

func TestCreateTopicsValidation(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	create := func(name string, parts int32, rf int16, configs map[string]string, validateOnly bool) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
		return rc.Do(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	if st := create("a.b", 1, 1, nil, false); st.ErrorCode != 0 {
		t.Fatalf("create a.b: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	for _, tc := range []struct {
		name    string
		topic   string
		parts   int32
		rf      int16
		configs map[string]string
		want    *kerr.Error
	}{
		{"empty", "", 1, 1, nil, kerr.InvalidTopicException},
		{"dot", ".", 1, 1, nil, kerr.InvalidTopicException},
		{"dotdot", "..", 1, 1, nil, kerr.InvalidTopicException},
		{"249 chars", strings.Repeat("x", 249), 1, 1, nil, nil},
		{"250 chars", strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException},
		{"space", "a b", 1, 1, nil, kerr.InvalidTopicException},
		{"slash", "a/b", 1, 1, nil, kerr.InvalidTopicException},
		{"unicode", "tópic", 1, 1, nil, kerr.InvalidTopicException},
		{"legal chars", "aZ09._-", 1, 1, nil, nil},
		{"collides with a.b", "a_b", 1, 1, nil, kerr.InvalidTopicException},
		{"exists", "a.b", 1, 1, nil, kerr.TopicAlreadyExists},
		{"zero partitions", "zp", 0, 1, nil, kerr.InvalidPartitions},
		{"default partitions", "dp", -1, -1, nil, nil},
		{"rf 2", "rf2", 1, 2, nil, kerr.InvalidReplicationFactor},
		{"unknown config", "uc", 1, 1, map[string]string{"no.such": "1"}, kerr.InvalidConfig},
		{"bad retention", "br", 1, 1, map[string]string{"retention.ms": "-5"}, kerr.InvalidConfig},
		{"compact", "cp", 1, 1, map[string]string{"cleanup.policy": "compact"}, nil},
		{"compact and delete", "cpd", 1, 1, map[string]string{"cleanup.policy": "delete,compact", "min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "0"}, nil},
		{"unknown policy", "up", 1, 1, map[string]string{"cleanup.policy": "compact,purge"}, kerr.InvalidConfig},
		{"empty policy", "ep", 1, 1, map[string]string{"cleanup.policy": ""}, kerr.InvalidConfig},
		{"dirty ratio above 1", "dr", 1, 1, map[string]string{"min.cleanable.dirty.ratio": "1.5"}, kerr.InvalidConfig},
		{"min lag above max", "lag", 1, 1, map[string]string{"min.compaction.lag.ms": "2000", "max.compaction.lag.ms": "1000"}, kerr.InvalidConfig},
		{"min lag above default max", "lag2", 1, 1, map[string]string{"min.compaction.lag.ms": "2000"}, nil},
		{"good configs", "gc", 2, 1, map[string]string{"retention.ms": "60000", "message.timestamp.type": "LogAppendTime", "compression.type": "producer"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, validateOnly := range []bool{true, false} {
				st := create(tc.topic, tc.parts, tc.rf, tc.configs, validateOnly)
				got := kerr.ErrorForCode(st.ErrorCode)
				if tc.want == nil && got != nil || tc.want != nil && got != tc.want {
					t.Fatalf("validateOnly=%v: got %v (%v), want %v", validateOnly, got, st.ErrorMessage, tc.want)
				}
				if got == nil && !validateOnly && st.TopicID == ([16]byte{}) {
					t.Fatalf("no topic id")
				}
			}
		})
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = nil
	resp := rc.Do(md).(*kmsg.MetadataResponse)
	names := map[string]int{}
	for _, mt := range resp.Topics {
		names[*mt.Topic] = len(mt.Partitions)
	}
	if len(names) != 8 || names["dp"] != 1 || names["gc"] != 2 || names["cp"] != 1 || names["lag2"] != 1 {
		t.Fatalf("topics after creation: %v", names)
	}
}

func TestMetadataTopicLists(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	adm := kadm.NewClient(newClient(t, b.Addr()))
	createTopic(t, adm, "m1", 2, nil)
	createTopic(t, adm, "m2", 1, nil)
	for _, tc := range []struct {
		name    string
		version int16
		topics  []kmsg.MetadataRequestTopic
		want    int
	}{
		{"v0 empty means all", 0, []kmsg.MetadataRequestTopic{}, 2},
		{"v1 null means all", 1, nil, 2},
		{"v1 empty means none", 1, []kmsg.MetadataRequestTopic{}, 0},
		{"v12 one", 12, []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("m1")}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(tc.version)
			md.Topics = tc.topics
			resp := rc.Do(md).(*kmsg.MetadataResponse)
			if len(resp.Topics) != tc.want {
				t.Fatalf("%d topics, want %d", len(resp.Topics), tc.want)
			}
			if len(resp.Brokers) != 1 || resp.Brokers[0].Port == 0 {
				t.Fatalf("brokers %+v", resp.Brokers)
			}
		})
	}
	t.Run("auto create", func(t *testing.T) {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(9)
		md.AllowAutoTopicCreation = true
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto1")}}
		resp := rc.Do(md).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("auto create: %v, %d partitions", kerr.ErrorForCode(resp.Topics[0].ErrorCode), len(resp.Topics[0].Partitions))
		}
		md.AllowAutoTopicCreation = false
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto2")}}
		resp = rc.Do(md).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("no auto create: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
	})
	t.Run("by id", func(t *testing.T) {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("m2")}}
		id := rc.Do(md).(*kmsg.MetadataResponse).Topics[0].TopicID
		md.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}}
		resp := rc.Do(md).(*kmsg.MetadataResponse)
		if resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != "m2" {
			t.Fatalf("by id: %+v", resp.Topics[0])
		}
	})
}

func TestApiVersions(t *testing.T) {
	b := brokertest.Start(t, "memory")
	rc := dialRaw(t, b.Addr())
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := rc.Do(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) < 15 {
			t.Fatalf("v%d: %v, %d keys", v, kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
		}
	}
	// A version above ours: the v0 format with UNSUPPORTED_VERSION.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(5)
	corr := rc.Send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	rc.Recv(corr, resp)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("v5: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	ranges := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		ranges[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	// What librdkafka 2.0 (kcat) needs inside the ranges.
	for key, v := range map[int16]int16{18: 0, 0: 7, 1: 11, 3: 4, 2: 1, 22: 0} {
		r, ok := ranges[key]
		if !ok || v < r[0] || v > r[1] {
			t.Errorf("key %d: range %v does not include v%d", key, r, v)
		}
	}
	if r := ranges[0]; r != [2]int16{3, 11} {
		t.Errorf("produce range %v", r)
	}
	if r := ranges[1]; r != [2]int16{4, 16} {
		t.Errorf("fetch range %v", r)
	}
}

func TestListOffsetsAndDeleteRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, "lo", 1, nil)
		ctx := testCtx(t, 30*time.Second)
		// Timestamps 1000, 2000, ... 10000, with the max in the middle.
		tss := []int64{1000, 2000, 3000, 4000, 9000, 5000, 6000, 7000, 8000, 8500}
		for _, ts := range tss {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lo", Value: []byte("v"), Timestamp: time.UnixMilli(ts)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			milli int64
			want  int64
		}{{0, 0}, {1000, 0}, {1500, 1}, {4001, 4}, {9000, 4}, {9001, 10}} {
			lo, err := adm.ListOffsetsAfterMilli(ctx, tc.milli, "lo")
			if err != nil {
				t.Fatal(err)
			}
			o, _ := lo.Lookup("lo", 0)
			if o.Err != nil || o.Offset != tc.want {
				t.Errorf("after %d: offset %d (%v), want %d", tc.milli, o.Offset, o.Err, tc.want)
			}
		}
		rc := dialRaw(t, b.Addr())
		lreq := func(ts int64, version int16) kmsg.ListOffsetsResponseTopicPartition {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(version)
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "lo"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = ts
			rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
			req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
			return rc.Do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		}
		if p := lreq(-3, 7); p.ErrorCode != 0 || p.Offset != 4 || p.Timestamp != 9000 {
			t.Errorf("max timestamp: %+v", p)
		}
		if p := lreq(-1, 1); p.Offset != 10 {
			t.Errorf("latest: %+v", p)
		}
		if p := lreq(-2, 8); p.Offset != 0 {
			t.Errorf("earliest: %+v", p)
		}

		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "lo", Partition: 0, At: 6})
		dr, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := dr.Lookup("lo", 0); r.Err != nil || r.LowWatermark != 6 {
			t.Fatalf("delete records: %+v", r)
		}
		starts, err := adm.ListStartOffsets(ctx, "lo")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup("lo", 0); o.Offset != 6 {
			t.Fatalf("start offset %d after DeleteRecords(6)", o.Offset)
		}
		os = kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "lo", Partition: 0, At: 11})
		dr, _ = adm.DeleteRecords(ctx, os)
		if r, _ := dr.Lookup("lo", 0); r.Err != kerr.OffsetOutOfRange {
			t.Fatalf("delete above hw: %v", r.Err)
		}
		// A consumer from the start now begins at 6.
		cons := newClient(t, b.Addr(), kgo.ConsumeTopics("lo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		fs := cons.PollFetches(ctx)
		if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 6 {
			t.Fatalf("first record after delete: %v", recs)
		}
	})
}

func val(c kadm.Config) string { return c.MaybeValue() }

func TestConfigsRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, "cfg", 2, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")})
		ctx := testCtx(t, 30*time.Second)
		describe := func() map[string]kadm.Config {
			t.Helper()
			rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
			if err != nil {
				t.Fatal(err)
			}
			rc, err := rcs.On("cfg", nil)
			if err != nil || rc.Err != nil {
				t.Fatalf("describe: %v %v", err, rc.Err)
			}
			m := map[string]kadm.Config{}
			for _, c := range rc.Configs {
				m[c.Key] = c
			}
			_ = m
			return m
		}
		m := describe()
		if c := m["retention.ms"]; val(c) != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("retention.ms: %+v", c)
		}
		if c := m["segment.bytes"]; val(c) != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("segment.bytes: %+v", c)
		}
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kmsg.StringPtr("LogAppendTime")},
			{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("1048576")},
			{Op: kadm.DeleteConfig, Name: "retention.ms"},
		}, "cfg")
		if err != nil || resp[0].Err != nil {
			t.Fatalf("alter: %v %v", err, resp[0].Err)
		}
		m = describe()
		if val(m["message.timestamp.type"]) != "LogAppendTime" || val(m["segment.bytes"]) != "1048576" || m["retention.ms"].Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("after alter: %+v %+v %+v", m["message.timestamp.type"], m["segment.bytes"], m["retention.ms"])
		}
		// LogAppendTime is live: a record with an old timestamp gets the broker's.
		before := time.Now().Add(-time.Second)
		pr := cl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Partition: 0, Value: []byte("x"), Timestamp: time.UnixMilli(5)})
		if err := pr.FirstErr(); err != nil {
			t.Fatal(err)
		}
		cons := newClient(t, b.Addr(), kgo.ConsumeTopics("cfg"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		fs := cons.PollFetches(ctx)
		if recs := fs.Records(); len(recs) != 1 || recs[0].Timestamp.Before(before) {
			t.Fatalf("LogAppendTime record: %v", recs)
		}
		// Invalid values are refused and change nothing.
		resp, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact,purge")}}, "cfg")
		if resp[0].Err != kerr.InvalidConfig {
			t.Fatalf("compact,purge: %v", resp[0].Err)
		}
		// Legacy AlterConfigs replaces the whole set.
		rc := dialRaw(t, b.Addr())
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(2)
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
		rr.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.bytes", Value: kmsg.StringPtr("12345")}}
		req.Resources = []kmsg.AlterConfigsRequestResource{rr}
		if ar := rc.Do(req).(*kmsg.AlterConfigsResponse); ar.Resources[0].ErrorCode != 0 {
			t.Fatalf("alter configs: %v", kerr.ErrorForCode(ar.Resources[0].ErrorCode))
		}
		m = describe()
		if val(m["retention.bytes"]) != "12345" || val(m["message.timestamp.type"]) != "CreateTime" {
			t.Fatalf("after legacy alter: %+v %+v", m["retention.bytes"], m["message.timestamp.type"])
		}
		// Partitions can grow, never shrink.
		cp, err := adm.UpdatePartitions(ctx, 4, "cfg")
		if err != nil || cp["cfg"].Err != nil {
			t.Fatalf("create partitions: %v %v", err, cp["cfg"].Err)
		}
		cp, _ = adm.UpdatePartitions(ctx, 3, "cfg")
		if cp["cfg"].Err != kerr.InvalidPartitions {
			t.Fatalf("shrink: %v", cp["cfg"].Err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Partition: 3, Value: []byte("p3")}).FirstErr(); err != nil {
			t.Fatalf("produce to new partition: %v", err)
		}
		// Broker configs are described (this broker's: the empty name is
		// the cluster-wide dynamic default, empty here).
		bcs, err := adm.DescribeBrokerConfigs(ctx, 0)
		if err != nil || len(bcs) != 1 || len(bcs[0].Configs) == 0 {
			t.Fatalf("broker configs: %v %v", err, bcs)
		}
	})
}

func TestDeleteTopic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be string) {
		b := brokertest.Start(t, be)
		cl := newClient(t, b.Addr())
		adm := kadm.NewClient(cl)
		createTopic(t, adm, "del", 2, nil)
		ctx := testCtx(t, 30*time.Second)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "del", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		dr, err := adm.DeleteTopics(ctx, "del")
		if err != nil || dr["del"].Err != nil {
			t.Fatalf("delete: %v %v", err, dr["del"].Err)
		}
		dr, _ = adm.DeleteTopics(ctx, "del")
		if dr["del"].Err != kerr.UnknownTopicOrPartition {
			t.Fatalf("delete again: %v", dr["del"].Err)
		}
		// Re-created, it is empty.
		createTopic(t, adm, "del", 1, nil)
		ends, err := adm.ListEndOffsets(ctx, "del")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup("del", 0); o.Offset != 0 {
			t.Fatalf("re-created topic end offset %d", o.Offset)
		}
	})
}

// TestElectLeadersSingleNode: a single-node broker leads every partition
// and is its only replica: every election is not needed; an unknown
// partition is UNKNOWN_TOPIC_OR_PARTITION. Through kadm (v2) and raw v0/v1.
func TestElectLeadersSingleNode(t *testing.T) {
	b := brokertest.Start(t, "memory")
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "el", 2, nil)
	ctx := testCtx(t, 10*time.Second)
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}, 1: {}, 5: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 5: kerr.UnknownTopicOrPartition} {
		if r := rs["el"][p]; !errors.Is(r.Err, want) {
			t.Errorf("el-%d: %v (%s), want %v", p, r.Err, r.ErrMessage, want)
		}
	}
	if r := rs["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("nope-0: %v", r.Err)
	}
	// All partitions (null topics), and the old versions.
	rc := dialRaw(t, b.Addr())
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(v)
		resp := rc.Do(req).(*kmsg.ElectLeadersResponse)
		n := 0
		for _, tr := range resp.Topics {
			for _, pr := range tr.Partitions {
				if pr.ErrorCode != kerr.ElectionNotNeeded.Code {
					t.Errorf("v%d %s-%d: %v", v, tr.Topic, pr.Partition, kerr.ErrorForCode(pr.ErrorCode))
				}
				n++
			}
		}
		if resp.ErrorCode != 0 || n < 2 {
			t.Errorf("v%d: error %v, %d partitions", v, kerr.ErrorForCode(resp.ErrorCode), n)
		}
	}
}
