package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/quota"
	"github.com/sluice/sluice/record"
	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// maxQueuedRequests is how many decoded requests may wait for the handler
// on one connection. Kept small because a frame may be as large as
// socket.request.max.bytes: a connection holds at most maxQueuedRequests+2
// request frames (queued, being handled, being read). Pipelined requests
// beyond that wait in the socket buffers, which is all pipelining needs.
const maxQueuedRequests = 2

// maxQueuedResponses is how many responses may wait for the writer. They
// are small (fetch data is referenced, not copied), so the writer can batch
// many into one writev. It also bounds a connection's pipelined acks=all
// produce requests (00_produce.go): at most maxQueuedResponses responses
// waiting for their ISR, plus the one the writer waits on and the one the
// handler holds while the queue is full.
const maxQueuedResponses = 32

// requestHeaderMin is the smallest request header: api key, api version,
// correlation id and a null client id (2+2+4+2).
const requestHeaderMin = 10

// writeTimeout bounds one flush of responses to a client that stopped
// reading, so a stuck peer cannot pin a connection's goroutines forever.
const writeTimeout = 2 * time.Minute

// request is one decoded request frame.
type request struct {
	key, version int16
	corr         int32
	clientID     string
	kreq         kmsg.Request // nil for an ApiVersions at an unsupported version
	// closeErr, when set, is why the connection must close once the
	// responses to earlier requests are written.
	closeErr error
	// raw is a raw SASL token of a v0 exchange (no header): body holds it.
	raw bool
	// authStep is a SaslAuthenticate read before the connection
	// authenticated: the reader waits for the handler's verdict on it
	// (rawMore) before it reads the next frame's api key. Next to raw so
	// that the two share a word of request.
	authStep bool
	body     []byte
	// frame is the buffer kreq was decoded from, charged to the server's
	// request memory pool until the request has been handled (putFrame).
	frame frameBuf
	pool  *memPool // nil when frame is empty
	// received is when the frame was read whole (set only with metrics:
	// the start of the request's queue time).
	received metrics.Stamp
	// crc is what the read checked of a Produce request's batches, CRCs
	// and records (crcscan.go), over crcFrame, the bytes kreq was decoded
	// from.
	crc      crcScan
	crcFrame []byte
}

// recyclable reports whether a request of this key is done with its frame
// when its handler returns, so the frame may go back to its class pool.
// Produce qualifies: replication.Partition.Append does not retain the
// batches after it returns and handleProduce waits for every partition,
// and kmsg copies strings out of the frame. Fetch too: its request has no
// []byte field but unknown tags, which nothing reads, and what the fetch
// session keeps (fetch_session.go) and the answer carries are copies
// (strings, topic ids, numbers); handleFetch returns only after its long
// poll. A consumer sends a Fetch per answer, so at 10,000 records/s with
// linger 0 a 4 KiB frame per Fetch left to the GC made the broker collect
// about 17 times a second on a heap of 2 MB (TestRecyclableRequestsHoldNoBytes
// guards the "no []byte" part against a kmsg upgrade). Other handlers may
// keep []byte fields of their request (group metadata, assignments), so
// their frames are left to the GC. Either way the frame's bytes go back to
// the memory pool: what a handler keeps is bounded by that handler's state.
func recyclable(key int16) bool { return key == apiKeyProduce || key == apiKeyFetch }

// putFrame releases a handled request's frame; the handler is done with
// it (for Produce, the append has finished: record slices point into it).
// A frame that decoded into nothing (refused, malformed) is referenced by
// nobody and goes back to its class pool whatever its key.
func (r *request) putFrame() {
	if r.pool != nil {
		r.frame.free(r.pool, r.raw || r.kreq != nil && !recyclable(r.key))
		r.pool = nil
	}
}

// response is what the handler hands the writer, in request order.
type response struct {
	corr int32
	// kresp is encoded with kmsg; nil means no response (acks=0 produce)
	// unless encode is set.
	kresp kmsg.Response
	// encode, when set, writes the whole frame (size, header, body) to w
	// itself: the zero-copy fetch path. It owns any slices it holds and must
	// release them even if it is never called: see release.
	encode func(w *zerocopy.Writer, corr int32) error
	// release is called instead of encode when the response is dropped.
	release func()
	// close: close the connection after writing what came before.
	close bool
	// sizeHint, when > 0, is about how many bytes kresp encodes to: the
	// frame buffer is grown to it once instead of by append as the
	// encoder goes. Metadata for all of 100,000 partitions is 2.6 MB, and
	// growing a buffer to that by append allocated ~13 MB per request
	// (half of all the garbage while growing to that many partitions).
	sizeHint int
	// wait, when set, must return before the response is encoded: the
	// writer calls it once, in order, after sending the responses before
	// it (a pipelined acks=all produce waiting for its ISR, 00_produce.go).
	// It returns when the request's outcome was decided (its Handled) and
	// its remote time. release, when set, is still called if the response
	// is dropped instead.
	wait func() (metrics.Stamp, time.Duration)

	// api and timing are the request's metrics (api nil: none kept); the
	// writer completes timing and counts it once the response is sent,
	// under api and, for a Fetch, also under its kind (FetchConsumer or
	// FetchFollower).
	api     *metrics.API
	also    *metrics.API
	version int16
	timing  metrics.Timing
}

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn
	ip netip.Addr // the peer's address, counted in s.limits
	// listener is the name of the listener the connection came in on;
	// quota is its connection quota, whose slot unregister gives back.
	listener string
	quota    *listenerQuota
	// auth is the connection's authentication (auth.go).
	auth connAuth
	// rawMore carries, from the handler to the reader, whether a v0 SASL
	// exchange goes on with raw tokens (after a v0 SaslHandshake, after
	// each raw token and after a SaslAuthenticate read before
	// authentication: request.authStep).
	rawMore chan bool
	pool    *memPool // request memory, s.limits.pool
	log     *slog.Logger
	reqs    chan *request  // reader -> handler; closed by the reader
	resp    chan *response // handler -> writer; closed by the handler
	done    chan struct{}  // closed when the writer has closed nc

	// ctx is cancelled when the reader stops (the client went away, a bad
	// frame, or shutdown): requests that block for long, like JoinGroup
	// waiting for a rebalance, give up on it.
	ctx    context.Context
	cancel context.CancelFunc
	// ackCtx is cancelled when the client went away (the reader stopped
	// other than by stopReading) or the writer quit: pipelined acks=all
	// waits end, and acks=all produce requests still queued are not
	// appended (00_produce.go).
	ackCtx    context.Context
	ackCancel context.CancelFunc
	// ackWake wakes the writer when a pipelined produce's AckGroup is done
	// (shared by the connection's requests; capacity 1).
	ackWake chan struct{}
	// pipelined counts the responses with a wait the handler queued and
	// the writer has not finished waiting for; pipeIdle (capacity 1)
	// receives when it drops to 0. The handler waits for 0 before any
	// request but a Produce (awaitPipeline).
	pipelined atomic.Int32
	pipeIdle  chan struct{}

	stopOnce sync.Once
	stopped  chan struct{} // closed by stopReading

	// lst counts the connection in its listener's metrics (nil: none).
	lst *metrics.Listener

	// lowat is the reader's SO_RCVLOWAT for large frames (rcvlowat.go).
	lowat rcvLowat

	// mutedUntil (Unix ns; 0: never) is when a quota throttle ends: until
	// then the connection reads and handles nothing (quota.go).
	mutedUntil atomic.Int64
}

func newConn(s *Server, nc net.Conn) *conn {
	tuneLoopback(nc)
	ctx, cancel := context.WithCancel(context.Background())
	ackCtx, ackCancel := context.WithCancel(context.Background())
	return &conn{
		ctx:       ctx,
		cancel:    cancel,
		ackCtx:    ackCtx,
		ackCancel: ackCancel,
		ackWake:   make(chan struct{}, 1),
		pipeIdle:  make(chan struct{}, 1),
		s:         s,
		nc:        nc,
		pool:      s.limits.pool.Load(),
		log:       s.log.With("remote", nc.RemoteAddr().String()),
		reqs:      make(chan *request, maxQueuedRequests),
		rawMore:   make(chan bool, 1),
		resp:      make(chan *response, maxQueuedResponses),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
		lowat:     newRcvLowat(nc),
	}
}

func (c *conn) start() {
	go c.readLoop()
	go c.handleLoop()
	go c.writeLoop()
}

// stopReading makes the reader stop at the next frame boundary (graceful
// shutdown): requests already read are still answered.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		close(c.stopped)
		// Wake a reader blocked in Read. A frame half read is abandoned,
		// which is fine: its sender gets no answer either way.
		c.nc.SetReadDeadline(time.Now())
	})
}

// readBufferSize is the read buffer of a connection, held for its life:
// 4 KiB holds the requests that come often and small (fetches, heartbeats,
// offset commits, a produce of one small batch) while 10,000 idle
// connections cost 40 MiB, not 160. It is not charged to the request
// memory pool: it is part of a connection's fixed cost.
const readBufferSize = 4 << 10

// readLoop reads frames until EOF, an error, a bad frame or shutdown.
//
// Deadlines: waiting for a frame's first byte is bounded by
// connections.max.idle.ms; from that byte to the frame's last, waits for
// request memory included, by request.read.timeout.ms.
func (c *conn) readLoop() {
	defer close(c.reqs)
	defer c.cancel()
	defer func() {
		select {
		case <-c.stopped: // graceful: requests read are still answered
		default:
			c.ackCancel()
		}
	}()
	// A small request (a produce of one batch, a fetch, a heartbeat) and
	// the size before it arrive with one read instead of two; a body larger
	// than the buffer is read straight into its frame (bufio does not copy
	// reads bigger than its buffer when it is empty).
	if err := c.tlsPrincipal(); err != nil {
		if !c.authTimedOut() { // else counted and logged by authTimeout
			c.lst.AuthenticationFailed()
			c.log.Info("server: closing connection", "err", err)
		}
		return
	}
	rd := bufio.NewReaderSize(c.nc, readBufferSize)
	var size [4]byte
	last := 0    // the recent frames' peak size: the first buffer of the next (recentPeak)
	raw := false // reading raw SASL tokens of a v0 exchange
	for {
		if idle := c.s.cfg.ConnectionsMaxIdle; idle > 0 {
			c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		select {
		case <-c.stopped:
			return
		default:
		}
		if !c.waitMuted(true) { // a quota throttle (quota.go)
			return
		}
		if _, err := rd.Peek(1); err != nil {
			c.logReadErr(err, false)
			return
		}
		var deadline time.Time
		if t := c.s.cfg.RequestReadTimeout; t > 0 {
			deadline = time.Now().Add(t)
			c.nc.SetReadDeadline(deadline)
		}
		if _, err := io.ReadFull(rd, size[:]); err != nil {
			c.logReadErr(err, true)
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		authed := c.auth.authenticated.Load()
		if max := c.maxFrame(authed); n < 0 || !raw && n < requestHeaderMin || n > max {
			c.log.Warn("server: closing connection: bad request size", "size", n, "max", max, "authenticated", authed)
			return
		}
		if !authed && !raw {
			closeErr, err := c.refuseBeforeAuth(rd)
			if err != nil {
				c.logReadErr(err, true)
				return
			}
			if closeErr != nil {
				c.log.Warn("server: closing connection", "err", closeErr, "size", n)
				return
			}
		}
		var frame frameBuf
		var scan crcScan
		if raw {
			scan.off = true
		}
		body, err := c.readBody(rd, &frame, &scan, int(n), last, deadline)
		if err != nil {
			frame.free(c.pool, false)
			c.logReadErr(err, true)
			return
		}
		last = recentPeak(last, int(n))
		var r *request
		if raw {
			r = &request{raw: true, body: body}
		} else {
			r = c.s.decodeRequest(body)
			if r.key == apiKeyProduce && r.kreq != nil {
				r.crc, r.crcFrame = scan, body
			}
			r.authStep = !authed && r.key == apiKeySASLAuthenticate
		}
		r.frame, r.pool = frame, c.pool
		if c.s.metrics != nil {
			r.received = metrics.Now()
		}
		if r.closeErr != nil {
			c.log.Warn("server: closing connection", "err", r.closeErr)
		}
		select {
		case c.reqs <- r:
		case <-c.done:
			r.putFrame()
			return
		}
		if r.closeErr != nil {
			return
		}
		if r.raw || r.key == apiKeySASLHandshake && r.version == 0 || r.authStep {
			// Whether raw tokens follow is the handler's to say; after
			// a SaslAuthenticate, waiting for it also tells the next
			// frame's refuseBeforeAuth whether the connection is now
			// authenticated.
			select {
			case raw = <-c.rawMore:
			case <-c.done:
				return
			}
		}
	}
}

// recentPeak returns the connection's recent peak frame size after a
// frame of n bytes, given peak, the value after the frame before: n, or
// peak decayed by an eighth when that is more. It sizes the next frame's
// first buffer. A producer's frames vary from
// request to request (franz-go fills each with what its partitions have
// buffered: 8-52 MiB in sluice perf omb over 1,000 partitions); sized by
// the previous frame alone, every frame larger than its class was read
// into a fresh mapping and copied (frameBuf). A connection that sent a
// large frame has shown it can send that size, and keeps that allowance
// for the next few frames.
func recentPeak(peak, n int) int {
	return max(n, peak-peak/8)
}

// readBody reads an n-byte frame body into f, growing f as the bytes
// arrive (see memPool): the size prefix alone costs a connection at most
// max(minFrameClass, want) bytes, want being the recent peak of its
// frame sizes (recentPeak), which it has shown it can send. On error f may hold bytes; the
// caller frees it.
func (c *conn) readBody(rd *bufio.Reader, f *frameBuf, scan *crcScan, n, want int, deadline time.Time) ([]byte, error) {
	have := 0
	for {
		buf, err := f.grow(c.pool, n, have, want, deadline, c.stopped, c.done)
		if err != nil {
			return nil, err
		}
		m, err := c.lowat.readFrame(rd, buf, have, scan)
		have += m
		if err != nil {
			return nil, err
		}
		if have == n {
			buf = f.settle(n)
			if !scan.off {
				scan.finish(buf)
			}
			if err := c.lowat.reset(); err != nil {
				return nil, err
			}
			return buf, nil
		}
	}
}

func (c *conn) logReadErr(err error, midFrame bool) {
	stopping := func() bool {
		select {
		case <-c.stopped:
			return true
		case <-c.done:
			return true
		default:
			return false
		}
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case stopping():
	case midFrame && (errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errPoolWait)):
		c.log.Info("server: closing connection: request not read in time", "request.read.timeout.ms", c.s.cfg.RequestReadTimeout.Milliseconds())
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("server: closing idle connection", "connections.max.idle.ms", c.s.cfg.ConnectionsMaxIdle.Milliseconds())
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.log.Info("server: connection closed mid-frame")
	default:
		c.log.Debug("server: read failed", "err", err)
	}
}

// decodeRequest parses the header and body of one frame. It never panics on
// malformed input and never returns nil; a request the connection cannot go
// on after carries closeErr.
func (s *Server) decodeRequest(body []byte) (r *request) {
	r = &request{}
	defer func() {
		if p := recover(); p != nil {
			s.panics.Add(1)
			s.log.Error("server: panic decoding request", "panic", p, "stack", string(debug.Stack()))
			r.kreq = nil
			r.closeErr = fmt.Errorf("server: panic decoding request key %d v%d: %v", r.key, r.version, p)
		}
	}()
	rd := kbin.Reader{Src: body}
	r.key = rd.Int16()
	r.version = rd.Int16()
	r.corr = rd.Int32()
	if cid := rd.NullableString(); cid != nil {
		r.clientID = *cid
	}
	if !rd.Ok() {
		r.closeErr = errors.New("server: truncated request header")
		return r
	}
	api, ok := s.apis[r.key]
	if !ok {
		r.closeErr = fmt.Errorf("server: unsupported api key %d", r.key)
		return r
	}
	if r.version < api.min || r.version > api.max {
		if r.key == apiKeyApiVersions {
			return r // answered in the v0 format with UNSUPPORTED_VERSION
		}
		r.closeErr = fmt.Errorf("server: unsupported %s version %d (serving v%d-v%d)", kmsg.NameForKey(r.key), r.version, api.min, api.max)
		return r
	}
	kreq := kmsg.RequestForKey(r.key)
	kreq.SetVersion(r.version)
	if kreq.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			r.closeErr = errors.New("server: truncated request header tags")
			return r
		}
	}
	if err := decodeBudget(r.key, r.version, rd.Src, len(body)); err != nil {
		r.closeErr = err
		return r
	}
	if err := kreq.ReadFrom(rd.Src); err != nil {
		r.closeErr = fmt.Errorf("server: decode %s v%d: %w", kmsg.NameForKey(r.key), r.version, err)
		return r
	}
	r.kreq = kreq
	return r
}

// handleLoop runs requests in order and queues their responses.
func (c *conn) handleLoop() {
	defer close(c.resp)
	stop := false
	for r := range c.reqs {
		if !stop && (r.key != apiKeyProduce || r.raw) && !c.awaitPipeline() {
			stop = true
		}
		if stop || c.skipProduce(r) {
			r.putFrame()
			continue // drain so the reader is never stuck
		}
		if c.mutedUntil.Load() != 0 && !c.waitMuted(false) { // a quota throttle (quota.go)
			stop = true
			r.putFrame()
			continue
		}
		resp := c.s.handleRequest(c, r)
		r.putFrame()
		if resp == nil {
			continue
		}
		if resp.wait != nil {
			c.pipelined.Add(1)
		}
		select {
		case c.resp <- resp:
		case <-c.done:
			stop = true
			if resp.wait != nil {
				c.pipelined.Add(-1)
			}
			dropResponse(resp)
			continue
		}
		if resp.close {
			stop = true
		}
	}
}

// awaitPipeline waits until no pipelined produce request of the
// connection is still waiting for its ISR, so that the request about to
// be handled sees their outcome (read your writes, as Kafka's one request
// at a time per connection gives). false: the writer quit.
func (c *conn) awaitPipeline() bool {
	for c.pipelined.Load() > 0 {
		select {
		case <-c.pipeIdle:
		case <-c.done:
			return false
		}
	}
	return true
}

// skipProduce reports whether r is an acks=all produce request taken after
// the client went away: its answer could not be delivered, so it is not
// appended. (acks 0 and 1 are appended as Kafka does: a client may send
// acks=0 records and close.)
func (c *conn) skipProduce(r *request) bool {
	if r.key != apiKeyProduce || r.raw || c.ackCtx.Err() == nil {
		return false
	}
	pr, ok := r.kreq.(*kmsg.ProduceRequest)
	return ok && pr.Acks == -1
}

// handleRequest runs one request; nil means nothing to write. A panic in a
// handler is recovered and closes the connection.
func (s *Server) handleRequest(c *conn, r *request) (resp *response) {
	if r.closeErr != nil {
		return &response{close: true}
	}
	if c != nil {
		if r.raw {
			resp, more := c.rawToken(r.body)
			c.rawMore <- more
			return resp
		}
		if r.key == apiKeySASLHandshake && r.version == 0 || r.authStep {
			defer func() { c.rawMore <- c.auth.session != nil && c.auth.raw }()
		}
		if err := c.checkAuth(r.key); err != nil {
			c.log.Warn("server: closing connection", "err", err)
			return &response{close: true}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			s.panics.Add(1)
			s.log.Error("server: panic handling request", "api", kmsg.NameForKey(r.key), "version", r.version, "panic", p, "stack", string(debug.Stack()))
			resp = &response{close: true}
		}
	}()
	if r.kreq == nil { // ApiVersions at a version we do not serve
		return &response{corr: r.corr, kresp: s.apis.unsupported()}
	}
	rc := &reqCtx{conn: c, clientID: r.clientID, version: r.version, req: r}
	var started metrics.Stamp
	if s.metrics != nil {
		started = metrics.Now()
	}
	var quotaStart time.Time
	if c != nil && s.quotas.Enabled() {
		quotaStart = time.Now()
	}
	out, err := s.apis[r.key].handle(s, rc, r.kreq)
	if !quotaStart.IsZero() && err == nil {
		s.applyThrottle(c, rc, r.key, out, time.Since(quotaStart)-time.Duration(rc.remote.Load()))
	}
	if s.metrics != nil && err == nil && r.received != 0 {
		t := metrics.Timing{Received: r.received, Started: started, Handled: metrics.Now(), Remote: time.Duration(rc.remote.Load())}
		api := s.metrics.Request(r.key)
		if out == nil {
			api.Done(r.version, &t) // no response: done now
			rc.also.Done(r.version, &t)
		} else {
			out.api, out.also, out.version, out.timing = api, rc.also, r.version, t
			if out.kresp != nil && out.wait == nil { // else counted after the wait
				countResponseErrors(api, r.key, out.kresp)
			}
		}
	}
	if err != nil {
		if c != nil {
			c.log.Warn("server: closing connection", "api", kmsg.NameForKey(r.key), "version", r.version, "err", err)
		}
		return &response{close: true}
	}
	if out == nil {
		return nil
	}
	out.corr = r.corr
	return out
}

// dropResponse releases what an unwritten response holds.
func dropResponse(r *response) {
	if r != nil && r.release != nil {
		r.release()
	}
}

// fetchInlineMax: a flush whose record bytes (file slices) add up to at most
// this goes out as one writev after reading them from the page cache; in a
// larger one each slice of at most a quarter of this is read so, the larger
// slices go by sendfile (zerocopy.Writer.SetInlineMax). A consumer tailing
// the log gets a small batch per fetch, and for it a write, a sendfile and
// a write (three TCP segments) cost more than one writev. BenchmarkFetchWrite in server/fetchresp
// (loopback, one partition; CPU per response, medians of 5): 1 KiB 13 vs
// 35 us, 4 KiB 13 vs 31, 16 KiB 16 vs 30, 64 KiB 49 vs 50 (even), 256 KiB
// 149 vs 118 (sendfile wins from there on).
const fetchInlineMax = 64 << 10

// writeLoop writes responses in order, flushing whenever the queue is empty,
// and closes the connection when the handler is done or a write fails.
func (c *conn) writeLoop() {
	w := zerocopy.NewWriter(c.nc)
	w.SetInlineMax(fetchInlineMax)
	// timed holds the responses of the current flush whose metrics are
	// counted once it is sent; reused, so it stops growing.
	var timed []*response
	defer func() {
		c.ackCancel() // nobody waits for the pipelined requests now
		w.Rollback(zerocopy.Mark{})
		c.stopAuthTimer()
		c.nc.Close()
		close(c.done)
		for r := range c.resp { // release what the handler still sends
			dropResponse(r)
		}
		c.unregister()
	}()
	for {
		r, ok := <-c.resp
		if !ok {
			return
		}
		// Batch: encode everything already queued, then flush once.
		for {
			if r.wait != nil {
				// Send what is ready before waiting on this one.
				if err := c.flushTimed(w, &timed); err != nil {
					dropResponse(r)
					return
				}
				awaitResponse(r)
				if c.pipelined.Add(-1) == 0 {
					select {
					case c.pipeIdle <- struct{}{}:
					default:
					}
				}
			}
			if r.close {
				encodeResponse(w, r) // its answer, if it has one, goes first
				c.flush(w)
				return
			}
			if r.api != nil {
				r.timing.Dequeued = metrics.Now()
				timed = append(timed, r)
			}
			if err := encodeResponse(w, r); err != nil {
				c.log.Error("server: encode response failed", "err", err)
				return
			}
			select {
			case r, ok = <-c.resp:
				if !ok {
					c.flush(w)
					return
				}
				continue
			default:
			}
			break
		}
		if err := c.flushTimed(w, &timed); err != nil {
			return
		}
	}
}

// flushTimed flushes w and counts the metrics of the responses it sent
// (timed, emptied for reuse).
func (c *conn) flushTimed(w *zerocopy.Writer, timed *[]*response) error {
	if err := c.flush(w); err != nil {
		return err
	}
	if len(*timed) > 0 {
		sent := metrics.Now()
		for i, r := range *timed {
			r.timing.Sent = sent
			r.api.Done(r.version, &r.timing)
			r.also.Done(r.version, &r.timing)
			(*timed)[i] = nil
		}
		*timed = (*timed)[:0]
	}
	return nil
}

// awaitResponse runs r.wait and completes r's metrics with it: the request
// was handled when its outcome was decided, its wait from its appends to
// then is remote time (the time from then until the writer got to it is
// response queue time), and errors the wait put in the response are
// counted now.
func awaitResponse(r *response) {
	handled, remote := r.wait()
	r.wait = nil
	if r.api == nil {
		return
	}
	r.timing.Handled, r.timing.Remote = max(handled, r.timing.Handled), remote
	if r.kresp != nil {
		countResponseErrors(r.api, apiKeyProduce, r.kresp)
	}
}

func (c *conn) flush(w *zerocopy.Writer) error {
	if w.Buffered() == 0 {
		return nil
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	before := w.Stats()
	err := w.Flush()
	if err != nil {
		c.log.Debug("server: write failed", "err", err)
	}
	c.s.sent.add(before, w.Stats())
	return err
}

// encodeResponse appends one response frame to w.
func encodeResponse(w *zerocopy.Writer, r *response) error {
	if r.encode != nil {
		return r.encode(w, r.corr)
	}
	if r.kresp == nil {
		return nil
	}
	if r.sizeHint > 0 {
		w.GrowFrame(r.sizeHint + 16) // + size, correlation id, header tags
	}
	w.SetFrame(appendKmsgFrame(w.Frame(), r.corr, r.kresp))
	return nil
}

// appendKmsgFrame appends size, response header and body. The header has
// tagged fields for flexible versions, except ApiVersions whose response
// header is always v0 (KIP-511: a client must parse it before it knows
// which versions the broker speaks).
func appendKmsgFrame(dst []byte, corr int32, kresp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if kresp.IsFlexible() && kresp.Key() != apiKeyApiVersions {
		dst = append(dst, 0)
	}
	dst = kresp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// reqCtx is what a handler knows about the request besides its body.
type reqCtx struct {
	conn     *conn // nil in FuzzDispatch and direct handler tests
	clientID string
	version  int16
	// remote is the time in ns the handler waited on others (the ISR of an
	// acks=all produce, a fetch's long poll): the request's remote time.
	remote atomic.Int64
	// also is a second request-metrics handle the handler chose (a Fetch's
	// FetchConsumer or FetchFollower); nil: none.
	also *metrics.API
	// req is the request being handled; nil in FuzzDispatch and direct
	// handler tests.
	req *request
	// throttleMs is the largest quota throttle the request earned, under
	// throttleType; quotaExempt keeps it out of request_percentage (a
	// follower's fetch). See quota.go.
	throttleMs   int32
	throttleType quota.Type
	quotaExempt  bool
	// fetchOut is a Fetch's response, whose throttle time is not a kmsg
	// field (nil for other requests).
	fetchOut *fetchresp.Response
}

// prechecked is what was checked of the k-th records field of the Produce
// request being handled as it was read (crcScan).
func (rc *reqCtx) prechecked(k int, records []byte) record.Prechecked {
	if rc == nil || rc.req == nil {
		return record.Prechecked{}
	}
	return rc.req.crc.checked(rc.req.crcFrame, k, records)
}

// addRemote notes a wait of d by one of a request's partitions. Partitions
// of a produce wait concurrently, so the request waited the longest of
// them. Safe for concurrent use.
func (rc *reqCtx) addRemote(d time.Duration) {
	if rc == nil || d <= 0 {
		return
	}
	for {
		cur := rc.remote.Load()
		if int64(d) <= cur || rc.remote.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// addRemoteSince adds the time since t (zero: metrics off, nothing) to a
// request's sequential waits (a long poll parks, wakes and parks again).
func (rc *reqCtx) addRemoteSince(t time.Time) {
	if rc == nil || t.IsZero() {
		return
	}
	rc.remote.Add(int64(time.Since(t)))
}

// closing returns a channel closed when the connection or server is going
// away: long polls return early on it.
func (rc *reqCtx) closing(s *Server) (<-chan struct{}, <-chan struct{}) {
	if rc.conn == nil {
		return s.closing, nil
	}
	return s.closing, rc.conn.done
}

// unregister removes c from its server; the writer calls it when the
// connection is closed.
func (c *conn) unregister() {
	s := c.s
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.limits.closed(c.ip)
	s.limits.listenerClosed(c.quota)
	c.lst.Closed()
	s.shareConnClosed(c)
	s.connWG.Done()
}
