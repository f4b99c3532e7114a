package sasl

import (
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// ErrServerRejected marks a client exchange that failed on the client's
// side: a malformed or forged server message, a server signature that does
// not verify (the server does not know the password), too few iterations.
var ErrServerRejected = errors.New("sasl: server response rejected")

// ClientSession is the client side of one authentication exchange, for
// inter-broker connections and the CLI. Drive it with the server's
// messages until done:
//
//	msg, done, err := cs.Step(nil)
//	for err == nil && !done {
//		resp := saslAuthenticate(msg) // the server's answer (auth bytes)
//		msg, done, err = cs.Step(resp)
//	}
//
// done comes from the Step that consumed the server's last message; it
// never comes with a message to send. A ClientSession is not safe for
// concurrent use and serves one exchange.
type ClientSession struct {
	mechanism string
	step      int
	// PLAIN
	plain []byte
	// SCRAM
	conv *scram.ClientConversation
}

// NewClientSession starts a client exchange as user with password.
// Errors: ErrUnsupportedMechanism.
func NewClientSession(mechanism, user, password string) (*ClientSession, error) {
	cs := &ClientSession{mechanism: mechanism}
	switch {
	case mechanism == Plain:
		cs.plain = plainMessage(user, password)
	case isScram(mechanism):
		// Unprepped: Kafka's clients and servers use the password's UTF-8
		// bytes, not its SASLprep form.
		cl, err := hashFor(mechanism).NewClientUnprepped(user, password, "")
		if err != nil {
			return nil, fmt.Errorf("sasl: %s client: %w", mechanism, err)
		}
		cs.conv = cl.WithMinIterations(MinIterations).NewConversation()
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
	}
	return cs, nil
}

// Mechanism is the mechanism to name in SaslHandshake.
func (cs *ClientSession) Mechanism() string { return cs.mechanism }

// Step takes the server's last message (nil on the first call) and returns
// the next message to send, or done. Errors wrap ErrServerRejected and end
// the exchange.
func (cs *ClientSession) Step(serverMsg []byte) (clientMsg []byte, done bool, err error) {
	cs.step++
	if cs.conv == nil { // PLAIN: send the message, accept the (empty) answer
		switch cs.step {
		case 1:
			return cs.plain, false, nil
		case 2:
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%w: PLAIN: the exchange has already ended", ErrServerRejected)
	}
	if cs.step == 1 && serverMsg != nil {
		return nil, false, fmt.Errorf("%w: %s: the client speaks first", ErrServerRejected, cs.mechanism)
	}
	out, err := cs.conv.Step(string(serverMsg))
	if err != nil {
		// xdg's errors name the problem (bad nonce, too few iterations,
		// server error e=...) and hold no secret.
		return nil, false, fmt.Errorf("%w: %s: %v", ErrServerRejected, cs.mechanism, err)
	}
	if cs.conv.Done() {
		if !cs.conv.Valid() {
			return nil, false, fmt.Errorf("%w: %s: server signature did not verify", ErrServerRejected, cs.mechanism)
		}
		return nil, true, nil
	}
	return []byte(out), false, nil
}
