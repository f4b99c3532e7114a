package console

// HTTP basic auth against the broker's users (auth/httpauth, shared with
// the schema registry), or a client certificate; authorization by the
// broker's authorizer.

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/httpauth"
	"github.com/sluice/sluice/auth/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Anonymous is the principal of every request when the broker has no
// authorizer.
const Anonymous = "User:ANONYMOUS"

// request is what a handler knows about who asks.
type request struct {
	principal string
	host      netip.Addr
	backend   *Backend // nil until Attach
}

// allowed reports whether the principal may do op on the resource.
func (q *request) allowed(op acl.Operation, rt acl.ResourceType, name string) bool {
	if q.backend == nil || q.backend.Authorizer == nil {
		return true
	}
	return q.backend.Authorizer.Authorize(q.principal, q.host, op, rt, name)
}

// require answers 403 with Kafka's error (code) unless the principal may
// do op on the resource; what names the refused action ("describe topic").
func (q *request) require(w http.ResponseWriter, op acl.Operation, rt acl.ResourceType, name, what string, code *kerr.Error) bool {
	if q.allowed(op, rt, name) {
		return true
	}
	writeError(w, http.StatusForbidden, "not authorized to "+what+" "+name, code.Message)
	return false
}

// authenticated wraps h: without AuthRequired every request is
// User:ANONYMOUS; with it a request needs a user of the broker (basic
// auth, auth/httpauth, else a client certificate TLSPrincipal maps), else
// 401 (after AuthFailureDelay for a wrong user or password). A basic-auth
// login from an address over its failed-login allowance (FailedLogins) is
// answered 429, after the same delay, without its password being checked.
func (s *Server) authenticated(h func(http.ResponseWriter, *http.Request, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &request{principal: Anonymous, host: remoteAddr(r), backend: s.backend.Load()}
		if !s.opts.AuthRequired {
			h(w, r, q)
			return
		}
		_, _, ok := r.BasicAuth()
		if !ok && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.opts.TLSPrincipal != nil {
			// tls.Config verified the chain (ssl.client.auth requested or
			// required) before the request got here.
			p, err := s.opts.TLSPrincipal(*r.TLS)
			if err != nil || p == "" || p == Anonymous {
				s.log.Info("console: client certificate maps to no principal", "remote", r.RemoteAddr, "err", err)
				unauthorized(w, "the client certificate maps to no principal")
				return
			}
			q.principal = p
			if s.opts.OnAuthSuccess != nil {
				s.opts.OnAuthSuccess()
			}
			h(w, r, q)
			return
		}
		var creds sasl.CredentialLookup
		if q.backend != nil {
			creds = q.backend.Credentials
		}
		ans := s.auth.Login(r, q.host, creds, q.backend != nil)
		switch ans.Result {
		case httpauth.OK:
			q.principal = "User:" + ans.User
			h(w, r, q)
		case httpauth.NoCredentials:
			unauthorized(w, "authentication required")
		case httpauth.Refused:
			secs := int64((ans.RetryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			writeError(w, http.StatusTooManyRequests,
				"too many failed logins from this address (max.failed.authentications.per.ip); retry in "+strconv.FormatInt(secs, 10)+" s",
				"SASL_AUTHENTICATION_FAILED")
		case httpauth.Unavailable:
			writeError(w, http.StatusServiceUnavailable, "the broker is starting: its SCRAM users are not loaded yet", "")
		case httpauth.StoreError:
			writeError(w, http.StatusServiceUnavailable, "the broker cannot read its SCRAM credentials; try again", "")
		case httpauth.Canceled:
			// The client went away while waiting for a derivation slot.
		default:
			unauthorized(w, "wrong user or password")
		}
	})
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
	writeError(w, http.StatusUnauthorized, msg, "SASL_AUTHENTICATION_FAILED")
}
