package server

// SaslHandshake (key 17), served v0-v1.
//
//	v0: the mechanism; the SASL tokens that follow are raw frames (no
//	    request header), until the exchange ends
//	v1: the tokens follow in SaslAuthenticate requests (KIP-152)
//
// On a SASL listener it starts an exchange of the requested mechanism
// (UNSUPPORTED_SASL_MECHANISM, with the enabled ones, when it is not
// enabled); on other listeners, or in the middle of an exchange, it is
// ILLEGAL_SASL_STATE. Sent again on an authenticated connection, it starts
// a re-authentication (KIP-368).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSASLHandshake(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := rc.conn
	if c == nil || !c.auth.sec.sasl() || c.auth.session != nil {
		resp.ErrorCode = errorCode(errSASLState)
		return kresp(resp), nil
	}
	a := &c.auth
	resp.SupportedMechanisms = a.sec.SASL.Mechanisms()
	if !slices.Contains(resp.SupportedMechanisms, r.Mechanism) {
		resp.ErrorCode = errorCode(fmt.Errorf("%w: %q", errSASLMechanism, r.Mechanism))
		return kresp(resp), nil
	}
	session, err := a.sec.SASL.NewSession(r.Mechanism)
	if err != nil {
		resp.ErrorCode = errorCode(fmt.Errorf("%w: %v", errSASLMechanism, err))
		return kresp(resp), nil
	}
	a.session, a.mech, a.raw = session, r.Mechanism, r.Version == 0
	return kresp(resp), nil
}
