package server

// DescribeUserScramCredentials (key 50) and AlterUserScramCredentials
// (key 51), served v0 (KIP-554): SCRAM users, kept in the metastore on a
// single node and in ZooKeeper's /config/users in cluster mode
// (Options.Credentials), where every broker sees a change within seconds.
//
// Mechanism codes are Kafka's: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512. Alter
// carries salted passwords (the client salts), never passwords; iterations
// must be 4096..16384 (UNACCEPTABLE_CREDENTIAL). Describe needs Describe on
// the cluster, Alter needs Alter (CLUSTER_AUTHORIZATION_FAILED); an
// unknown user is RESOURCE_NOT_FOUND. Credentials themselves are never
// described, only their mechanism and iterations.

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/auth/sasl"
)

// scramMechanisms are Kafka's ScramMechanism codes.
var scramMechanisms = map[int8]string{1: sasl.ScramSHA256, 2: sasl.ScramSHA512}

func scramCode(mech string) int8 {
	for c, m := range scramMechanisms {
		if m == mech {
			return c
		}
	}
	return 0
}

func handleDescribeUserScramCredentials(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	switch {
	case s.creds == nil:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return kresp(resp), nil
	case !s.az.allowedCluster(rc, acl.OpDescribe):
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return kresp(resp), nil
	}
	all, err := s.creds.List()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return kresp(resp), nil
	}
	var users []string
	if r.Users == nil {
		for u := range all {
			users = append(users, u)
		}
		sort.Strings(users)
	} else {
		for _, u := range r.Users {
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		mechs, ok := all[u]
		if !ok {
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "attempt to describe a user credential that does not exist"
			res.ErrorMessage = &msg
		}
		slices.Sort(mechs)
		for _, m := range mechs {
			c, ok, err := s.creds.Get(u, m)
			if err != nil || !ok {
				continue
			}
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramCode(m), int32(c.Iterations)
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
		resp.Results = append(resp.Results, res)
	}
	return kresp(resp), nil
}

func handleAlterUserScramCredentials(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	reqErr := error(nil)
	switch {
	case s.creds == nil:
		reqErr = fmt.Errorf("%w: no credential store", errInvalidRequest)
	case !s.az.allowedCluster(rc, acl.OpAlter):
		reqErr = errClusterAuthorization
	}
	results := map[string]error{}
	var order []string
	note := func(user string, err error) {
		if _, ok := results[user]; !ok {
			order = append(order, user)
			results[user] = nil
		}
		if err != nil && results[user] == nil {
			results[user] = err
		}
	}
	for _, d := range r.Deletions {
		err := reqErr
		mech, ok := scramMechanisms[d.Mechanism]
		if err == nil && !ok {
			err = fmt.Errorf("%w: mechanism %d", errUnsupportedSASLMechanism, d.Mechanism)
		}
		if err == nil {
			if err = s.creds.Delete(d.Name, mech); errors.Is(err, sasl.ErrCredentialNotFound) {
				err = fmt.Errorf("%w: %v", errResourceNotFound, err)
			}
		}
		note(d.Name, err)
	}
	for _, u := range r.Upsertions {
		err := reqErr
		mech, ok := scramMechanisms[u.Mechanism]
		if err == nil && !ok {
			err = fmt.Errorf("%w: mechanism %d", errUnsupportedSASLMechanism, u.Mechanism)
		}
		if err == nil {
			var c sasl.Credential
			if c, err = sasl.CredentialFromSaltedPassword(mech, u.Salt, u.SaltedPassword, int(u.Iterations)); err != nil {
				err = fmt.Errorf("%w: %v", errUnacceptableCredential, err)
			} else {
				err = s.creds.Put(u.Name, c)
			}
		}
		note(u.Name, err)
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if err := results[user]; err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		} else {
			s.log.Info("server: changed SCRAM credentials", "user", user, "by", rc.principal())
		}
		resp.Results = append(resp.Results, res)
	}
	return kresp(resp), nil
}
