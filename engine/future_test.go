package engine

import "testing"

// TestFutureLogID: a future log's id names Kafka's directory,
// "<topic>-<partition>.<uuid>-future", and parses back; other names do
// not parse as one.
func TestFutureLogID(t *testing.T) {
	id := PartitionID{Topic: "orders-eu", Partition: 12}
	f := FutureLogID(id, "0123456789abcdef0123456789abcdef")
	if f.Topic != "orders-eu-12.0123456789abcdef0123456789abcdef-future" || f.Partition != FuturePartition {
		t.Fatalf("FutureLogID = %+v", f)
	}
	back, uuid, ok := ParseFutureLogID(f)
	if !ok || back != id || uuid != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("ParseFutureLogID = %+v %q %v", back, uuid, ok)
	}
	for _, name := range []string{"orders-12", "orders-12.abc-delete", "orders.abc-future", "orders-x.abc-future", "orders-12.-future", "-1.abc-future", "orders-012.abc-future"} {
		if _, _, ok := ParseFutureDirName(name); ok {
			t.Errorf("%q parsed as a future log", name)
		}
	}
	if _, _, ok := ParseFutureLogID(id); ok {
		t.Error("a partition's own id parsed as a future log")
	}
}
