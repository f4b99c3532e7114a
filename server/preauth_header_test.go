package server

// Before authentication the reader refuses a request from its api key
// alone: a client that announces a large frame it may not send gets no
// memory and no wait for the rest of it.

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/internal/kraw"
)

// preAuthSlow makes every timeout but the header check's far longer than
// the tests wait, so that only the check can close a connection.
func preAuthSlow(c *config.Config) {
	c.RequestReadTimeout = 5 * time.Minute
	c.ConnectionsAuthenticationTimeout = 5 * time.Minute
	c.ConnectionsMaxIdle = 5 * time.Minute
	c.SASLServerMaxReceiveSize = 512 << 10
}

// headerOnly is the size prefix of an n-byte frame followed by the
// request header of key (version 0, correlation id 1, client id "t")
// and nothing else.
func headerOnly(n uint32, key int16) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, 0) // version
	b = binary.BigEndian.AppendUint32(b, 1) // correlation id
	b = binary.BigEndian.AppendUint16(b, 1) // client id length
	return append(b, 't')
}

// awaitClosed reports whether the server closed rc within d (EOF or a
// reset), polling in short reads so a test never waits longer.
func awaitClosed(rc *kraw.Conn, d time.Duration) bool {
	nc := rc.NetConn()
	var one [1]byte
	for end := time.Now().Add(d); time.Now().Before(end); {
		nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := nc.Read(one[:])
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return true
		}
	}
	return false
}

func TestPreAuthHeaderRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  int16
	}{
		{"key=Metadata", apiKeyMetadata},
		{"key=Produce", apiKeyProduce},
		{"key=DescribeGroups", 15},
		{"key=unknown", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := startSASLServer(t, preAuthSlow)
			rc := kraw.Dial(t, addr)
			defer rc.Close()
			rc.WriteRaw(headerOnly(512<<10, tc.key))
			if !awaitClosed(rc, 5*time.Second) {
				t.Fatalf("connection still open 5s after a %s header before authentication", tc.name)
			}
			s.limits.init(&s.cfg, s.log) // a no-op that orders the read of pool after Serve set it
			if n := s.limits.pool.Load().inUse(); n != 0 {
				t.Fatalf("%d bytes of request memory in use after the refusal", n)
			}
		})
	}
}

// TestPreAuthHeaderAllowed: what may come before authentication is read
// and answered as before, and everything is served after it, a request
// sent right behind the SaslAuthenticate (without waiting for its answer)
// included.
func TestPreAuthHeaderAllowed(t *testing.T) {
	_, addr := startSASLServer(t, preAuthSlow)
	rc := kraw.Dial(t, addr)
	defer rc.Close()
	v := kmsg.NewPtrApiVersionsRequest()
	v.SetVersion(3)
	v.ClientSoftwareName, v.ClientSoftwareVersion = "t", "1"
	if resp := rc.Do(v).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	if c := rc.Do(hs).(*kmsg.SASLHandshakeResponse).ErrorCode; c != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(c))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	authCorr := rc.Send(au)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	mdCorr := rc.Send(md) // pipelined behind the SaslAuthenticate
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.SetVersion(1)
	rc.Recv(authCorr, ar)
	if ar.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate: %v", kerr.ErrorForCode(ar.ErrorCode))
	}
	mr := kmsg.NewPtrMetadataResponse()
	mr.SetVersion(9)
	rc.Recv(mdCorr, mr)
	if len(mr.Brokers) != 1 {
		t.Fatalf("metadata after authentication: %+v", mr)
	}
	if resp := rc.Do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("second metadata after authentication: %+v", resp)
	}
}
