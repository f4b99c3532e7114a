// Package kconn is a minimal Kafka protocol client connection: it sends one
// kmsg request at a time over a TCP connection and reads its response. The
// broker uses it for its own inter-broker traffic (follower fetches, the
// controller's LeaderAndIsr and UpdateMetadata), where a full client with
// metadata, routing and retries (kgo) would be in the way.
package kconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxResponseBytes bounds a response size read from the network.
const MaxResponseBytes = 256 << 20

// ErrClosed is returned after Close.
var ErrClosed = errors.New("kconn: closed")

// Conn is one connection to one broker. Safe for concurrent use: requests
// are serialized. After a network or protocol error the connection is closed
// and the next Request redials.
type Conn struct {
	addr     string
	clientID string
	timeout  time.Duration
	sec      Security

	mu   sync.Mutex
	nc   net.Conn
	corr int32
	buf  []byte
	// br reads responses from brConn, which is nc unless nc was replaced
	// (redialed, or wrapped in TLS): then reader makes a new one.
	br     *bufio.Reader
	brConn net.Conn
	closed bool
}

// readBufferSize is the size of a Conn's read buffer: a small response
// (a follower's fetch with nothing new, an e2e record) arrives with its
// size prefix in one read(2) instead of two; a larger one is read past the
// buffer, straight into the response buffer, after copying at most this
// much.
const readBufferSize = 4 << 10

// reader returns the buffered reader of c.nc. REQUIRES: c.mu held, c.nc open.
func (c *Conn) reader() *bufio.Reader {
	if c.br == nil || c.brConn != c.nc {
		c.br, c.brConn = bufio.NewReaderSize(c.nc, readBufferSize), c.nc
	}
	return c.br
}

// New returns a Conn that dials addr (host:port) on first use. timeout
// bounds dialing and each request's round trip when ctx has no deadline.
func New(addr, clientID string, timeout time.Duration) *Conn {
	return NewSecure(addr, clientID, timeout, Security{})
}

// Security is how a Conn secures its connection: TLS when TLS is set, then
// a SASL exchange (SaslHandshake v1 and SaslAuthenticate) when SASL is.
type Security struct {
	TLS *tls.Config
	// SASL starts a client exchange for a new connection (package
	// auth/sasl's ClientSession).
	SASL func() (SASLClient, error)
}

// SASLClient is the client side of one SASL exchange.
type SASLClient interface {
	Mechanism() string
	// Step takes the server's last message (nil first) and returns the
	// next one to send, or done.
	Step(serverMsg []byte) (clientMsg []byte, done bool, err error)
}

// NewSecure is New with security for every connection it dials.
func NewSecure(addr, clientID string, timeout time.Duration, sec Security) *Conn {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Conn{addr: addr, clientID: clientID, timeout: timeout, sec: sec}
}

// secure runs the TLS handshake and the SASL exchange on a fresh
// connection. REQUIRES: c.mu held, c.nc the fresh connection.
func (c *Conn) secure(ctx context.Context) error {
	if c.sec.TLS != nil {
		cfg := c.sec.TLS.Clone()
		if cfg.ServerName == "" {
			if h, _, err := net.SplitHostPort(c.addr); err == nil {
				cfg.ServerName = h
			}
		}
		tc := tls.Client(c.nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
		c.nc = tc
	}
	if c.sec.SASL == nil {
		return nil
	}
	cl, err := c.sec.SASL()
	if err != nil {
		return err
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, cl.Mechanism()
	resp, err := c.roundTrip(ctx, hs, nil)
	if err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SaslHandshake %s: %w", cl.Mechanism(), err)
	}
	var in []byte
	for {
		out, done, err := cl.Step(in)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", cl.Mechanism(), err)
		}
		if done {
			return nil
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 1, out
		resp, err := c.roundTrip(ctx, au, nil)
		if err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			return fmt.Errorf("SASL %s: %w", cl.Mechanism(), err)
		}
		in = ar.SASLAuthBytes
	}
}

// Addr is the address this Conn talks to.
func (c *Conn) Addr() string { return c.addr }

// Request sends req (its version must be set) and returns the decoded
// response of the same version. The response owns its memory.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.RequestBuffered(ctx, req, nil)
}

// RequestBuffered is Request reading the response into *buf, which it grows
// when too small and leaves for the next call, instead of a new allocation
// (buf nil: a new one). The byte slices of the returned response (a Fetch's
// RecordBatches) alias *buf: they are valid only until *buf is used again,
// so it suits a caller that is done with each response before its next
// request, as a follower's fetcher is. Measured on a follower replicating
// 1 KiB records (scripts/bench-replication.sh): a fresh response buffer of
// up to replica.fetch.max.bytes per fetch spent ~20% of the follower's CPU
// zeroing new memory (runtime.memclrNoHeapPointers). Strings are copied by
// the decoder and never alias *buf.
func (c *Conn) RequestBuffered(ctx context.Context, req kmsg.Request, buf *[]byte) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.nc == nil {
		d := net.Dialer{Timeout: c.timeout}
		nc, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return nil, fmt.Errorf("kconn: dial %s: %w", c.addr, err)
		}
		c.nc = nc
		if err := c.secure(ctx); err != nil {
			c.nc.Close()
			c.nc, c.br, c.brConn = nil, nil, nil
			return nil, fmt.Errorf("kconn: %s: %w", c.addr, err)
		}
	}
	resp, err := c.roundTrip(ctx, req, buf)
	if err != nil {
		c.nc.Close()
		c.nc, c.br, c.brConn = nil, nil, nil
		return nil, fmt.Errorf("kconn: %s to %s: %w", kmsg.NameForKey(req.Key()), c.addr, err)
	}
	return resp, nil
}

// roundTrip reads the response into *rbuf (grown as needed) or, with rbuf
// nil, into a new buffer. REQUIRES: c.mu held, c.nc open.
func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request, rbuf *[]byte) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.timeout)
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// The AfterFunc may still run after stop, once this round trip failed
	// and Request closed and cleared c.nc: it holds this connection, not
	// c.nc (a deadline on a closed connection is harmless).
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	c.corr++
	corr := c.corr
	b := c.buf[:0]
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.clientID)))
	b = append(b, c.clientID...)
	if req.IsFlexible() {
		b = append(b, 0) // empty header tagged fields
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	if k, ok := req.(*kmsg.ProduceRequest); ok && k.Acks == 0 {
		return nil, nil
	}

	r := c.reader()
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > MaxResponseBytes {
		return nil, fmt.Errorf("response size %d out of range", n)
	}
	var body []byte
	switch {
	case rbuf == nil:
		body = make([]byte, n)
	case cap(*rbuf) >= int(n):
		body = (*rbuf)[:n]
	default:
		*rbuf = make([]byte, n)
		body = *rbuf
	}
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("correlation id %d, expected %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Response header v1 (flexible) carries tagged fields, except
	// ApiVersions whose response header is always v0.
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 {
			return nil, errors.New("truncated response header")
		}
		skip, err := skipTags(body)
		if err != nil {
			return nil, err
		}
		body = body[skip:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return resp, nil
}

// skipTags returns the size of a tagged-field section at the start of b.
func skipTags(b []byte) (int, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return 0, errors.New("bad tag count")
	}
	pos := used
	for i := uint64(0); i < n; i++ {
		_, u1 := binary.Uvarint(b[pos:])
		if u1 <= 0 {
			return 0, errors.New("bad tag")
		}
		pos += u1
		l, u2 := binary.Uvarint(b[pos:])
		if u2 <= 0 || uint64(len(b)-pos-u2) < l {
			return 0, errors.New("bad tag length")
		}
		pos += u2 + int(l)
	}
	return pos, nil
}

// Close closes the connection; later Requests return ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.nc != nil {
		err := c.nc.Close()
		c.nc, c.br, c.brConn = nil, nil, nil
		return err
	}
	return nil
}
