package metastore

// PutCheckpoint stores value under name, replacing any previous value,
// synced before it returns. The store copies value. Checkpoints are meant to
// be small (producer state snapshots, high watermarks): each Put rewrites the
// whole value.
func (s *Store) PutCheckpoint(name string, value []byte) error {
	return s.set(checkpointKey(nil, name), appendCheckpoint(make([]byte, 0, 1+len(value)), value))
}

// GetCheckpoint returns a copy of the value stored under name, owned by the
// caller, or ErrNotFound. A stored empty value returns a non-nil empty slice.
func (s *Store) GetCheckpoint(name string) ([]byte, error) {
	key := checkpointKey(nil, name)
	var out []byte
	err := s.get(key, func(v []byte) (err error) {
		out, err = decodeCheckpoint(key, v)
		return err
	})
	return out, err
}
