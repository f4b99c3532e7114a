package segment

// Failure returns the log's sticky failure (a failed write or sync: the
// log refuses writes until reopened), nil while it is healthy. Cheap and
// safe for concurrent use; the broker's readiness check reports a failed
// log's partition as offline.
func (l *Log) Failure() error { return l.failure() }
