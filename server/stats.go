package server

import (
	"sync/atomic"

	"github.com/sluice/sluice/zerocopy"
)

// Stats counts how the bytes of responses left the broker, over all
// connections since start: record bytes sent with sendfile(2) straight from
// the page cache (the segment backend's fetch path), record bytes copied
// through user space (other backends, or sendfile refused), record bytes of
// small responses and small slices read from the file and written with their framing
// (InlineBytes, also counted in WriteBytes; see fetchInlineMax), and framing
// and in-memory bytes written. Operators and tests read it to see that
// fetches really are zero-copy.
type Stats struct {
	SendfileBytes int64
	CopyBytes     int64
	InlineBytes   int64
	WriteBytes    int64
	Fallbacks     int64

	// RequestPoolUsed is the request memory pool's bytes in use (Kafka's
	// MemoryPoolUsed): the buffers of the requests being read or
	// handled, queued.max.request.bytes bounding them.
	RequestPoolUsed int64
}

type sendCounters struct {
	sendfile, copied, inlined, written, fallbacks atomic.Int64
}

// add records what one Flush moved (the difference of the writer's
// counters before and after it).
func (c *sendCounters) add(before, after zerocopy.Stats) {
	c.sendfile.Add(after.SendfileBytes - before.SendfileBytes)
	c.copied.Add(after.CopyBytes - before.CopyBytes)
	c.inlined.Add(after.InlineBytes - before.InlineBytes)
	c.written.Add(after.WriteBytes - before.WriteBytes)
	c.fallbacks.Add(after.Fallbacks - before.Fallbacks)
}

// Stats returns the response byte counters. Safe for concurrent use.
func (s *Server) Stats() Stats {
	used, _ := s.limits.poolUsage()
	return Stats{
		SendfileBytes: s.sent.sendfile.Load(),
		CopyBytes:     s.sent.copied.Load(),
		InlineBytes:   s.sent.inlined.Load(),
		WriteBytes:    s.sent.written.Load(),
		Fallbacks:     s.sent.fallbacks.Load(),

		RequestPoolUsed: used,
	}
}
