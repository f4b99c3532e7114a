package config

import "testing"

func TestShareGroupKeys(t *testing.T) {
	c := Default()
	if c.GroupShareRecordLockDuration.Milliseconds() != 30000 || c.GroupShareDeliveryCountLimit != 5 || c.GroupSharePartitionMaxLocks != 2000 {
		t.Fatalf("defaults: %v %d %d", c.GroupShareRecordLockDuration, c.GroupShareDeliveryCountLimit, c.GroupSharePartitionMaxLocks)
	}
	for _, tc := range []struct {
		name string
		set  map[string]string
		ok   bool
	}{
		{"within", map[string]string{"group.share.record.lock.duration.ms": "20000"}, true},
		{"below min", map[string]string{"group.share.record.lock.duration.ms": "10000"}, false},
		{"above max", map[string]string{"group.share.record.lock.duration.ms": "70000"}, false},
		{"bounds moved", map[string]string{"group.share.record.lock.duration.ms": "10000", "group.share.min.record.lock.duration.ms": "5000"}, true},
		{"delivery limit too low", map[string]string{"group.share.delivery.count.limit": "1"}, false},
		{"locks too many", map[string]string{"group.share.partition.max.record.locks": "10001"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			var err error
			for k, v := range tc.set {
				if err = c.Set(k, v); err != nil {
					break
				}
			}
			if err == nil {
				err = c.Validate()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
