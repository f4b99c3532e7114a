package segment

import (
	"testing"

	"github.com/sluice/sluice/engine"
	"github.com/sluice/sluice/record"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	st, err := engine.Open("segment", engine.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.CreateLog(engine.PartitionID{Topic: "t", Partition: 0}, engine.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b := record.AppendBatch(nil, record.BatchOptions{ProducerID: -1}, []record.BuildRecord{{Value: []byte("hi"), Timestamp: 5}})
	info, err := l.Append(b, engine.AppendOptions{AssignOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(info)
	sl, err := l.Read(0, 100, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sl.Len())
	sl.Release()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
