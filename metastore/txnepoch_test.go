package metastore

import "testing"

func TestProducerEpochRecords(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.PutProducerEpoch(7, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateOffsets("g", OffsetsUpdate{Epochs: map[int64]int16{8: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutProducerEpoch(-1, 0); err == nil {
		t.Fatal("negative producer id accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	es, err := s.ProducerEpochs()
	if err != nil || len(es) != 2 || es[7] != 3 || es[8] != 1 {
		t.Fatalf("epochs %v, %v", es, err)
	}
	if err := s.DeleteProducerEpochs([]int64{7, 9}); err != nil {
		t.Fatal(err)
	}
	if es, err = s.ProducerEpochs(); err != nil || len(es) != 1 || es[8] != 1 {
		t.Fatalf("after delete: %v, %v", es, err)
	}
}
