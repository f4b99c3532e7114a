package broker

import (
	"reflect"
	"testing"

	"github.com/sluice/sluice/console"
)

func TestSplitPartitions(t *testing.T) {
	got := splitPartitions([]string{"orders-0", "my-topic-12", "-3", "nopartition", "x-y", "t-"})
	want := []console.Partition{{Topic: "orders", Partition: 0}, {Topic: "my-topic", Partition: 12}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitPartitions = %+v, want %+v", got, want)
	}
}
