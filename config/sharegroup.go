package config

// checkShareGroupBounds is Kafka's GroupCoordinatorConfig rule for the
// share groups' record lock duration: within its bounds.
func (c *Config) checkShareGroupBounds() error {
	if c.GroupShareMinRecordLockDuration > c.GroupShareMaxRecordLockDuration {
		return keyError("group.share.min.record.lock.duration.ms", "above group.share.max.record.lock.duration.ms")
	}
	if d := c.GroupShareRecordLockDuration; d < c.GroupShareMinRecordLockDuration || d > c.GroupShareMaxRecordLockDuration {
		return keyError("group.share.record.lock.duration.ms", "%d is outside [%d, %d]", d.Milliseconds(),
			c.GroupShareMinRecordLockDuration.Milliseconds(), c.GroupShareMaxRecordLockDuration.Milliseconds())
	}
	return nil
}
