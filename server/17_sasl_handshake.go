package server

// SaslHandshake (key 17), served v0-v1.
//
//	v0: the mechanism; the SASL tokens that follow are raw frames (no
//	    request header), until the exchange ends
//	v1: the tokens follow in SaslAuthenticate requests (KIP-152)
//
// On a SASL listener it starts an exchange of the requested mechanism;
// one that is not enabled is answered UNSUPPORTED_SASL_MECHANISM, with the
// enabled ones, and the connection closes (Kafka's
// SaslServerAuthenticator). On other listeners, or in the middle of an
// exchange, it is ILLEGAL_SASL_STATE. Sent again on an authenticated
// connection, it starts a re-authentication (KIP-368) under the rules in
// auth.go: only with connections.max.reauth.ms set, at most once a second,
// with v1, and only with the connection's first mechanism.

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// minReauthInterval is Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS:
// a re-authentication sooner than this after the last one begins nothing.
const minReauthInterval = time.Second

func handleSASLHandshake(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := rc.conn
	if c == nil || !c.auth.sec.sasl() || c.auth.session != nil {
		resp.ErrorCode = errorCode(errSASLState)
		return kresp(resp), nil
	}
	a := &c.auth
	reauth := a.authenticated.Load()
	if reauth {
		now := time.Now()
		// Kafka's SocketServer begins a re-authentication only on a
		// session that expires, and not within a second of the last
		// one; otherwise KafkaApis answers the handshake itself.
		if a.expires.IsZero() || !a.reauthStarted.IsZero() && now.Sub(a.reauthStarted) < minReauthInterval || r.Version == 0 {
			if !a.expires.IsZero() && now.After(a.expires) {
				// Kafka then treats it as any request on an expired
				// session: the connection closes, unanswered.
				return &response{close: true}, nil
			}
			resp.ErrorCode = errorCode(errSASLState)
			return kresp(resp), nil
		}
		a.reauthStarted = now
	}
	resp.SupportedMechanisms = a.sec.SASL.Mechanisms()
	if !slices.Contains(resp.SupportedMechanisms, r.Mechanism) {
		c.authFailed()
		resp.ErrorCode = errorCode(fmt.Errorf("%w: %q", errSASLMechanism, r.Mechanism))
		return &response{kresp: resp, close: true}, nil
	}
	session, err := a.sec.SASL.NewSession(r.Mechanism)
	if err != nil {
		c.authFailed()
		resp.ErrorCode = errorCode(fmt.Errorf("%w: %v", errSASLMechanism, err))
		return &response{kresp: resp, close: true}, nil
	}
	a.reauthRefused = ""
	if reauth && r.Mechanism != a.mech {
		// Kafka's REAUTH_BAD_MECHANISM: the handshake succeeds, the next
		// token fails.
		a.reauthRefused = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", r.Mechanism, a.mech)
	} else {
		a.mech = r.Mechanism
	}
	a.session, a.raw = session, r.Version == 0
	return kresp(resp), nil
}
