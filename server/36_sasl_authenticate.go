package server

// SaslAuthenticate (key 36), served v0-v2.
//
//	v0: one SASL token each way
//	v1: session_lifetime_ms in the response (KIP-368)
//	v2: flexible
//
// Each request carries the client's next token of the exchange the
// SaslHandshake started (ILLEGAL_SASL_STATE without one). A failed
// exchange is answered SASL_AUTHENTICATION_FAILED after
// connection.failed.authentication.delay.ms, and the connection closes.
// So is the first token from an address over its failed-login allowance,
// unchecked. A re-authentication with another mechanism than the first
// closes the connection after that delay without an answer, as Kafka does
// (auth.go). The raw tokens of a v0 handshake go through rawToken.

import (
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/zerocopy"
)

func handleSASLAuthenticate(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := rc.conn
	if c == nil || c.auth.session == nil || c.auth.raw {
		resp.ErrorCode = errorCode(errSASLState)
		return &response{kresp: resp, close: true}, nil
	}
	if why := c.auth.reauthRefused; why != "" {
		c.failAuth(errors.New(why))
		return &response{close: true}, nil
	}
	if ok, retry := c.chargeLogin(); !ok {
		msg := c.refuseLogin(retry)
		resp.ErrorCode = errorCode(errSASLFailed)
		resp.ErrorMessage = &msg
		return &response{kresp: resp, close: true}, nil
	}
	out, done, err := c.auth.session.Step(r.SASLAuthBytes)
	if err == nil && done {
		err = c.saslDone()
	}
	if err != nil {
		during := "authentication"
		if c.reauthenticating() {
			during = "re-authentication"
		}
		c.failAuth(err)
		resp.ErrorCode = errorCode(errSASLFailed)
		// Kafka's texts: the mechanism's error is not sent (it could tell
		// whether the user exists), a changed principal is.
		msg := "Authentication failed during " + during + " due to invalid credentials with SASL mechanism " + c.auth.mech
		var pc errPrincipalChanged
		if errors.As(err, &pc) {
			msg = pc.Error()
		}
		resp.ErrorMessage = &msg
		return &response{kresp: resp, close: true}, nil
	}
	resp.SASLAuthBytes = out
	if done {
		resp.SessionLifetimeMillis = c.sessionLifetimeMs()
	}
	return kresp(resp), nil
}

// rawToken serves one raw SASL token of a v0 exchange: the answer is a raw
// frame too. It reports whether the exchange goes on (more raw tokens).
// A failed exchange closes the connection without an answer, as Kafka
// does for v0.
func (c *conn) rawToken(token []byte) (*response, bool) {
	a := &c.auth
	if a.session == nil {
		return &response{close: true}, false
	}
	if ok, retry := c.chargeLogin(); !ok {
		c.refuseLogin(retry)
		return &response{close: true}, false
	}
	out, done, err := a.session.Step(token)
	if err == nil && done {
		err = c.saslDone()
	}
	if err != nil {
		c.failAuth(err)
		return &response{close: true}, false
	}
	frame := &response{encode: func(w *zerocopy.Writer, _ int32) error {
		b := binary.BigEndian.AppendUint32(w.Frame(), uint32(len(out)))
		w.SetFrame(append(b, out...))
		return nil
	}, release: func() {}}
	return frame, !done
}
