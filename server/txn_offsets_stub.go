package server

// completeTxnOffsets is replaced by the offsets side (branch txnoffsets).
func (s *Server) completeTxnOffsets(producerID int64, offsetsPartitions []int32, commit bool) error {
	return nil
}
