package config

import (
	"errors"
	"testing"
	"time"
)

// TestShareGroupBrokerDefaults: the group.share.* keys have Kafka 4.2's
// defaults, and their cross-key rules refuse what Kafka refuses.
func TestShareGroupBrokerDefaults(t *testing.T) {
	c := Default()
	s := c.GroupShare
	if s.Enable || s.HeartbeatInterval != 5*time.Second || s.SessionTimeout != 45*time.Second || s.MaxSize != 200 ||
		s.RecordLockDurationMs != 30000 || s.MinRecordLockDurationMs != 15000 || s.MaxRecordLockDurationMs != 60000 ||
		s.DeliveryCountLimit != 5 || s.PartitionMaxRecordLocks != 2000 ||
		s.MinSessionTimeout != 45*time.Second || s.MaxSessionTimeout != time.Minute ||
		s.MinHeartbeatInterval != 5*time.Second || s.MaxHeartbeatInterval != 15*time.Second {
		t.Fatalf("defaults: %+v", s)
	}
	for _, bad := range [][]string{
		{"group.share.delivery.count.limit=11"},
		{"group.share.delivery.count.limit=1"},
		{"group.share.partition.max.record.locks=99"},
		{"group.share.record.lock.duration.ms=999"},
		{"group.share.record.lock.duration.ms=70000"}, // above the max of 60000
		{"group.share.session.timeout.ms=30000"},      // below the min of 45000
		{"group.share.max.size=1001"},
		{"group.share.assignors=simple,simple"},
		{"group.share.assignors=uniform"},
	} {
		if _, err := Load("", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	good, err := Load("", []string{"group.share.enable=true", "group.share.max.record.lock.duration.ms=120000", "group.share.record.lock.duration.ms=90000"})
	if err != nil || !good.ServesShareGroups() || good.GroupShare.RecordLockDurationMs != 90000 {
		t.Fatalf("good config: %v %+v", err, good.GroupShare)
	}
}

// TestShareGroupConfigs: per-group share.* keys are validated as Kafka's
// GroupConfig and honoured by ShareGroupSettings; unset ones fall back to
// the broker's.
func TestShareGroupConfigs(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		name  string
		props map[string]string
		ok    bool
	}{
		{"empty", nil, true},
		{"lock in bounds", map[string]string{"share.record.lock.duration.ms": "20000"}, true},
		{"lock below min", map[string]string{"share.record.lock.duration.ms": "14999"}, false},
		{"lock above max", map[string]string{"share.record.lock.duration.ms": "60001"}, false},
		{"session below min", map[string]string{"share.session.timeout.ms": "1000"}, false},
		{"heartbeat above max", map[string]string{"share.heartbeat.interval.ms": "16000"}, false},
		{"earliest", map[string]string{"share.auto.offset.reset": "earliest"}, true},
		{"by_duration", map[string]string{"share.auto.offset.reset": "by_duration:PT1H30M"}, true},
		{"by_duration days", map[string]string{"share.auto.offset.reset": "by_duration:P2DT3.5S"}, true},
		{"by_duration negative", map[string]string{"share.auto.offset.reset": "by_duration:-PT1H"}, false},
		{"by_duration garbage", map[string]string{"share.auto.offset.reset": "by_duration:soon"}, false},
		{"bad reset", map[string]string{"share.auto.offset.reset": "none"}, false},
		{"read_committed", map[string]string{"share.isolation.level": "read_committed"}, true},
		{"bad isolation", map[string]string{"share.isolation.level": "READ_COMMITTED"}, false},
		{"delivery limit", map[string]string{"share.delivery.count.limit": "3"}, true},
		{"delivery limit too big", map[string]string{"share.delivery.count.limit": "11"}, false},
		{"record locks", map[string]string{"share.partition.max.record.locks": "5000"}, true},
		{"record locks too small", map[string]string{"share.partition.max.record.locks": "50"}, false},
		{"renew", map[string]string{"share.renew.acknowledge.enable": "false"}, true},
		{"renew bad", map[string]string{"share.renew.acknowledge.enable": "maybe"}, false},
		{"not a number", map[string]string{"share.session.timeout.ms": "x"}, false},
		{"unknown share key", map[string]string{"share.nope": "1"}, false},
		{"backoff", map[string]string{"share.redelivery.backoff.ms": "500", "share.redelivery.backoff.max.ms": "8000",
			"share.redelivery.backoff.multiplier": "2.5"}, true},
		{"backoff zero", map[string]string{"share.redelivery.backoff.ms": "0"}, true},
		{"backoff negative", map[string]string{"share.redelivery.backoff.ms": "-1"}, false},
		{"backoff above an hour", map[string]string{"share.redelivery.backoff.ms": "3600001"}, false},
		{"backoff not a number", map[string]string{"share.redelivery.backoff.ms": "1s"}, false},
		{"backoff max below backoff", map[string]string{"share.redelivery.backoff.ms": "500", "share.redelivery.backoff.max.ms": "499"}, false},
		{"backoff max alone", map[string]string{"share.redelivery.backoff.max.ms": "1000"}, true},
		{"multiplier below 1", map[string]string{"share.redelivery.backoff.multiplier": "0.5"}, false},
		{"multiplier NaN", map[string]string{"share.redelivery.backoff.multiplier": "NaN"}, false},
		{"multiplier too big", map[string]string{"share.redelivery.backoff.multiplier": "101"}, false},
		{"multiplier not a number", map[string]string{"share.redelivery.backoff.multiplier": "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.CheckGroupConfigs(tc.props)
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrGroupConfig) {
				t.Fatalf("CheckGroupConfigs(%v) = %v, want ok=%v", tc.props, err, tc.ok)
			}
		})
	}
	s := c.ShareGroupSettings(map[string]string{"share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "earliest",
		"share.isolation.level": "read_committed", "share.delivery.count.limit": "3", "share.renew.acknowledge.enable": "false"})
	if s.RecordLockDuration != 20*time.Second || s.AutoOffsetReset != "earliest" || s.IsolationLevel != "read_committed" ||
		s.DeliveryCountLimit != 3 || s.RenewAcknowledgeEnable || s.SessionTimeout != 45*time.Second || s.PartitionMaxRecordLocks != 2000 {
		t.Fatalf("settings: %+v", s)
	}
	b := c.ShareGroupSettings(map[string]string{"share.redelivery.backoff.ms": "500", "share.redelivery.backoff.max.ms": "8000",
		"share.redelivery.backoff.multiplier": "2.5"})
	if b.RedeliveryBackoff != 500*time.Millisecond || b.RedeliveryBackoffMax != 8*time.Second || b.RedeliveryBackoffMultiplier != 2.5 {
		t.Fatalf("backoff settings: %+v", b)
	}
	if d := c.ShareGroupSettings(nil); d.RedeliveryBackoff != 0 || d.RedeliveryBackoffMax != 0 || d.RedeliveryBackoffMultiplier != 1 {
		t.Fatalf("default backoff settings: %+v", d)
	}
	for key, want := range map[string]string{"share.redelivery.backoff.ms": "0", "share.redelivery.backoff.max.ms": "0",
		"share.redelivery.backoff.multiplier": "1.0"} {
		k, ok := LookupGroupKey(key)
		if v, set := c.GroupValue(nil, k); !ok || v != want || set {
			t.Fatalf("default %s: %s %v %v", key, v, set, ok)
		}
	}
	k, _ := LookupGroupKey("share.record.lock.duration.ms")
	if v, set := c.GroupValue(nil, k); v != "30000" || set {
		t.Fatalf("default share.record.lock.duration.ms: %s %v", v, set)
	}
}
