package schemareg

// Authentication and authorization of the REST API (README, "Schema
// registry", Security).
//
// Authentication is HTTP basic auth against the broker's users, PLAIN and
// SCRAM, with the console's code (auth/httpauth: the same derivation
// cache, bound and failed-login limit, shared with the Kafka listeners).
// It is on when Security.Auth is set, which the broker does whenever its
// console needs a login too (an authorizer, a SASL listener, or an SSL
// listener with ssl.client.auth=required). Without credentials, or with
// wrong ones, a request gets 401 with Confluent's body
// {"error_code":401,"message":"Unauthorized"} and WWW-Authenticate; an
// address over max.failed.authentications.per.ip gets 429 with
// Retry-After. Every path needs a login, unknown ones included.
//
// Authorization follows the broker's ACLs (a nil Authorizer allows
// everything; super.users and allow.everyone.if.no.acl.found apply as
// for Kafka requests). A subject is named after a topic when it is
// <topic>-key or <topic>-value (TopicNameStrategy) and <topic> is a legal
// topic name; then
//
//	read  (get, list, lookup, compatibility check, its config or mode)  Describe on the topic
//	write (register, delete)                                            Write on the topic
//
// Any other subject (RecordNameStrategy, TopicRecordNameStrategy, a
// reference's own subject) is the cluster's:
//
//	read   Describe on the cluster
//	write  Alter on the cluster
//
// Writing a config or a mode (PUT/DELETE /config, /config/{s}, /mode,
// /mode/{s}) needs Alter on the cluster. Lists (/subjects, /schemas,
// /schemas/ids/{id}/subjects and /versions) show only the subjects the
// principal may read; a schema by id (/schemas/ids/{id}, /schema) needs
// read on one subject that uses it; the global config and mode, the
// schema types and the contexts are any logged-in user's. A refusal is
// 403 with error_code 40301, as Confluent's security plugin answers. A
// registration is checked on its subject only, not on the subjects its
// references name.
//
// In a cluster, a write forwarded to the writer carries the client's
// Authorization header (forward.go); the writer logs the client in and
// authorizes it again.

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/httpauth"
	"github.com/sluice/sluice/auth/sasl"
)

// Anonymous is the principal of every request when Security.Auth is nil.
const Anonymous = "User:ANONYMOUS"

// codeForbidden is Confluent's 403 (its security plugin's
// SchemaRegistryAuthorizationException).
const codeForbidden = 40301

// Authorizer decides what a principal may do; server.Authorizer has the
// same method, so the broker's authorizer is one.
type Authorizer interface {
	Authorize(principal string, host netip.Addr, op acl.Operation, rt acl.ResourceType, name string) bool
}

// Security is who may use the REST API. The zero value (or a nil
// *Security) lets everyone do everything as User:ANONYMOUS.
type Security struct {
	// Auth logs requests in; nil: no login, every request is Anonymous.
	Auth *httpauth.Authenticator
	// Credentials are the broker's SCRAM credentials; nil: PLAIN users
	// only.
	Credentials sasl.CredentialLookup
	// Authorizer decides; nil allows everything.
	Authorizer Authorizer
}

// caller is who sent a request, in its context.
type caller struct {
	principal string
	host      netip.Addr
}

type callerKey struct{}

func callerOf(q *http.Request) caller {
	if c, ok := q.Context().Value(callerKey{}).(caller); ok {
		return c
	}
	return caller{principal: Anonymous}
}

// authenticate logs q in; it returns q with its caller, or answers w
// (401, 429, 503) and returns nil.
func (r *Registry) authenticate(w http.ResponseWriter, q *http.Request) *http.Request {
	c := caller{principal: Anonymous, host: remoteAddr(q)}
	if sec := r.opts.Security; sec != nil && sec.Auth != nil {
		ans := sec.Auth.Login(q, c.host, sec.Credentials, true)
		switch ans.Result {
		case httpauth.OK:
			c.principal = "User:" + ans.User
		case httpauth.Refused:
			secs := int64((ans.RetryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			writeError(w, &apiError{429, fmt.Sprintf("Too many failed logins from this address (max.failed.authentications.per.ip); retry in %d s", secs)})
			return nil
		case httpauth.StoreError, httpauth.Unavailable:
			writeError(w, &apiError{503, "The broker cannot read its SCRAM credentials; try again"})
			return nil
		case httpauth.Canceled:
			return nil // the client went away
		default: // NoCredentials, Failed
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			writeError(w, &apiError{401, "Unauthorized"})
			return nil
		}
	}
	return q.WithContext(context.WithValue(q.Context(), callerKey{}, c))
}

func remoteAddr(q *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(q.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// allowed reports whether q's caller may do op on the resource.
func (r *Registry) allowed(q *http.Request, op acl.Operation, rt acl.ResourceType, name string) bool {
	return r.allowedFor(callerOf(q), op, rt, name)
}

// allowedFor reports whether c may do op on the resource.
func (r *Registry) allowedFor(c caller, op acl.Operation, rt acl.ResourceType, name string) bool {
	sec := r.opts.Security
	if sec == nil || sec.Authorizer == nil {
		return true
	}
	return sec.Authorizer.Authorize(c.principal, c.host, op, rt, name)
}

// subjectResource is what guards subject: its topic for <topic>-key and
// <topic>-value, else the cluster.
func subjectResource(subject string) (acl.ResourceType, string) {
	for _, suffix := range []string{"-key", "-value"} {
		if t, ok := strings.CutSuffix(subject, suffix); ok && legalTopic(t) {
			return acl.ResourceTopic, t
		}
	}
	return acl.ResourceCluster, acl.ClusterName
}

// legalTopic reports whether t is a legal Kafka topic name (1 to 249 of
// [a-zA-Z0-9._-], not "." or "..").
func legalTopic(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// mayReadSubject reports whether q's caller may read subject: Describe
// on its topic, else on the cluster.
func (r *Registry) mayReadSubject(q *http.Request, subject string) bool {
	return r.mayReadSubjectAs(callerOf(q), subject)
}

func (r *Registry) mayReadSubjectAs(c caller, subject string) bool {
	rt, name := subjectResource(subject)
	return r.allowedFor(c, acl.OpDescribe, rt, name)
}

// mayWriteSubject reports whether q's caller may register in or delete
// from subject: Write on its topic, else Alter on the cluster.
func (r *Registry) mayWriteSubject(q *http.Request, subject string) bool {
	rt, name := subjectResource(subject)
	if rt == acl.ResourceTopic {
		return r.allowed(q, acl.OpWrite, rt, name)
	}
	return r.allowed(q, acl.OpAlter, rt, name)
}

// authorize checks a routed request (q.Pattern set) by the rules above;
// write is whether its route changes state. It answers w with 403 and
// returns false when the caller may not.
func (r *Registry) authorize(w http.ResponseWriter, q *http.Request, write bool) bool {
	sec := r.opts.Security
	if sec == nil || sec.Authorizer == nil {
		return true
	}
	_, path, _ := strings.Cut(q.Pattern, " ")
	s := q.PathValue("s")
	configOrMode := strings.HasPrefix(path, "/config") || strings.HasPrefix(path, "/mode")
	switch {
	case write && configOrMode:
		if !r.allowed(q, acl.OpAlter, acl.ResourceCluster, acl.ClusterName) {
			writeError(w, denied("AlterConfigs", "Cluster", acl.ClusterName))
			return false
		}
	case s == "":
		// Global reads; lists are filtered by their handlers.
	case write:
		if !r.mayWriteSubject(q, s) {
			writeError(w, denied("Write", "Subject", s))
			return false
		}
	default:
		if !r.mayReadSubject(q, s) {
			writeError(w, denied("Read", "Subject", s))
			return false
		}
	}
	return true
}

// mayReadIDLocked reports whether q's caller may read a subject that
// uses is (so may read the schema by its id).
// REQUIRES: r.view.mu held.
func (r *Registry) mayReadIDLocked(q *http.Request, is *idState) bool {
	if sec := r.opts.Security; sec == nil || sec.Authorizer == nil {
		return true
	}
	for u := range is.uses {
		if r.mayReadSubject(q, u.subject) {
			return true
		}
	}
	return false
}

func denied(op, kind, name string) *apiError {
	return &apiError{codeForbidden, fmt.Sprintf("User is denied operation %s on %s: %s", op, kind, name)}
}
