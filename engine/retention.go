package engine

import "time"

// RetentionCut is the retention policy every backend applies, Kafka's
// deleteRetentionMsBreachedSegments followed by
// deleteRetentionSizeBreachedSegments: given a log's n segments (or their
// equivalent), oldest first, it returns how many of the oldest to delete.
// First those whose retention time (their newest record timestamp, or the
// time they were last written when no record carries one) is more than
// cfg.RetentionMs before now; then more of the oldest while the log without
// them still holds at least cfg.RetentionBytes. The newest segment is never
// deleted. seg(i) reports segment i's retention time (ms) and size.
//
// A log whose cleanup.policy does not include delete (compact alone, see
// LogConfig.DeletePolicy) deletes nothing here, whatever its retention
// settings, as Kafka's UnifiedLog.deleteOldSegments.
func RetentionCut(cfg LogConfig, now time.Time, n int, seg func(i int) (retentionMs, bytes int64)) int {
	if !cfg.DeletePolicy() {
		return 0
	}
	k := 0
	if cfg.RetentionMs >= 0 {
		limit := now.UnixMilli() - cfg.RetentionMs.Milliseconds()
		for k < n-1 {
			if ts, _ := seg(k); ts >= limit {
				break
			}
			k++
		}
	}
	if cfg.RetentionBytes >= 0 {
		var total int64
		for i := k; i < n; i++ {
			_, b := seg(i)
			total += b
		}
		for k < n-1 {
			_, b := seg(k)
			if total-b < cfg.RetentionBytes {
				break
			}
			total -= b
			k++
		}
	}
	return k
}
