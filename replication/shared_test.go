package replication

import (
	"testing"
	"time"
	"unsafe"

	"github.com/sluice/sluice/engine"
)

// TestSharedOptions: a partition keeps the Options.Shared it is given when
// that describes its own options, and ignores one made for another topic
// (or with any other topic-wide field different), keeping its own.
func TestSharedOptions(t *testing.T) {
	st := openStore(t, "memory")
	base := Options{Topic: testID.Topic, TopicID: [16]byte{1}, BrokerID: 1, ProducerScanBytes: 4096,
		ProducerIDExpiration: time.Hour}
	sh := base.NewShared()
	if sh.ReplicaLagTimeMax != DefaultReplicaLagTimeMax {
		t.Fatalf("NewShared lag max %v, want the default %v", sh.ReplicaLagTimeMax, DefaultReplicaLagTimeMax)
	}
	for i, tc := range []struct {
		name   string
		change func(o *Options)
		shared bool
	}{
		{"same topic", func(o *Options) {}, true},
		{"default lag max spelled out", func(o *Options) { o.ReplicaLagTimeMax = DefaultReplicaLagTimeMax }, true},
		{"other topic id", func(o *Options) { o.TopicID = [16]byte{2} }, false},
		{"other broker", func(o *Options) { o.BrokerID = 2 }, false},
		{"flush every append", func(o *Options) { o.FlushEveryAppend = true }, false},
		{"other scan bytes", func(o *Options) { o.ProducerScanBytes = 1 }, false},
		{"other expiration", func(o *Options) { o.ProducerIDExpiration = time.Minute }, false},
		{"other lag max", func(o *Options) { o.ReplicaLagTimeMax = time.Second }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			o.Partition = int32(i)
			tc.change(&o)
			o.Shared = sh
			l, err := st.CreateLog(engine.PartitionID{Topic: testID.Topic, Partition: o.Partition}, engine.LogConfig{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPartition(l, o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := p.opts.Shared == sh; got != tc.shared {
				t.Fatalf("partition keeps the given Shared: %v, want %v", got, tc.shared)
			}
			if !p.opts.Shared.Matches(&o) || p.Index() != o.Partition || p.TopicID() != o.TopicID {
				t.Fatalf("partition options %+v (index %d) do not describe %+v", *p.opts.Shared, p.Index(), o)
			}
		})
	}
}

// TestPartitionSize: a Partition fits the 416-byte size class (a broker
// holds one per partition: 100,000 on the pebble backend; it was 384
// before the acks=-1 watch list and the ISR size mirror of ackwait.go,
// which every leader taking acks=all produce needs). A field added
// to it should be one most partitions need; the rest can be made on first
// use, as the append queue and the transaction tracker are.
func TestPartitionSize(t *testing.T) {
	if n := unsafe.Sizeof(Partition{}); n > 416 {
		t.Fatalf("Partition is %d bytes, more than 416", n)
	}
}
