package server

// AlterClientQuotas (key 49), served v0-v1 (KIP-546).
//
//	v1: flexible
//
// Each entry names an entity (components "user" and/or "client-id", a
// null name for the default) and ops: set key to value, or remove key.
// Each entry succeeds or fails alone, as Kafka's
// ClientQuotaControlManager validates it: an empty entity, a type given
// twice, an unknown type, an empty name, an unknown key, a value not above
// 0, or a fraction for a byte rate is INVALID_REQUEST with Kafka's
// message. "ip" entities (KIP-612, ipquota.go) stand alone (with a user or
// client id: INVALID_REQUEST), name a literal address or the default (a
// null name; anything else that does not parse as an IP address, host
// names included, is "<ip> is not a valid IP or resolvable host.") and take
// only connection_creation_rate, an integer up to 2^31-1. With
// validate_only nothing is written. Writes are read-modify-writes of the
// entity's config (ZooKeeper: guarded by the znode's version, keeping a
// user's SCRAM credentials), announced to every broker.
//
// Needs AlterConfigs on the cluster: without it every entry is
// CLUSTER_AUTHORIZATION_FAILED. A request may alter at most
// maxQuotaAlterations entities; the ones past it are INVALID_REQUEST
// (each alteration is a synced write, and Kafka has no bound: a
// 100 MB request of them would hold the handler for hours).

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/quota"
)

// maxQuotaAlterations bounds the entities of one AlterClientQuotas
// request.
const maxQuotaAlterations = 10_000

func handleAlterClientQuotas(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := s.az.allowedCluster(rc, acl.OpAlterConfigs)
	for i, re := range r.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range re.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			out.Entity = append(out.Entity, ent)
		}
		var err error
		switch {
		case !allowed:
			err = errClusterAuthorization
		case i >= maxQuotaAlterations:
			err = fmt.Errorf("%w: more than %d entities in one request", errInvalidRequest, maxQuotaAlterations)
		default:
			err = s.alterClientQuota(re, r.ValidateOnly)
		}
		if err != nil {
			out.ErrorCode, out.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Entries = append(resp.Entries, out)
	}
	return kresp(resp), nil
}

// alterClientQuota validates and applies one entry.
func (s *Server) alterClientQuota(re kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	if ipName, ok, err := parseIPQuotaEntity(re.Entity); ok || err != nil {
		if err != nil {
			return err
		}
		return s.alterIPQuota(ipName, re.Ops, validateOnly)
	}
	e, err := parseQuotaEntity(re.Entity)
	if err != nil {
		return err
	}
	set := map[string]float64{}
	var remove []string
	for _, op := range re.Ops {
		if op.Remove {
			delete(set, op.Key)
			remove = append(remove, op.Key)
			continue
		}
		set[op.Key] = op.Value
	}
	// Validate before touching the store, so validate_only and a bad
	// entry cost no write.
	if _, err := (quota.Values{}).Apply(set, remove); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	var applied quota.Values
	err = s.quotaStore.Alter(e, func(cur quota.Values) (quota.Values, error) {
		v, err := cur.Apply(set, remove)
		applied = v
		return v, err
	})
	if err != nil {
		return err
	}
	// This broker applies it now; the others (and this one again) on the
	// change notification.
	s.quotas.Set(e, applied)
	return nil
}

// parseQuotaEntity reads an entity as Kafka validates it.
func parseQuotaEntity(cs []kmsg.AlterClientQuotasRequestEntryEntity) (quota.Entity, error) {
	var e quota.Entity
	if len(cs) == 0 {
		return e, fmt.Errorf("%w: Invalid empty client quota entity", errInvalidRequest)
	}
	for _, c := range cs {
		var dst *quota.Component
		switch c.Type {
		case quotaTypeUser:
			dst = &e.User
		case quotaTypeClientID:
			dst = &e.ClientID
		default:
			return e, fmt.Errorf("%w: Unhandled client quota entity type: %s", errInvalidRequest, c.Type)
		}
		if dst.Set {
			return e, fmt.Errorf("%w: Invalid client quota entity, duplicate entity entry %s", errInvalidRequest, c.Type)
		}
		switch {
		case c.Name == nil:
			*dst = quota.Default
		case *c.Name == "":
			return e, fmt.Errorf("%w: Empty %s not supported", errInvalidRequest, c.Type)
		default:
			*dst = quota.Named(*c.Name)
		}
	}
	return e, nil
}

// parseIPQuotaEntity reads an entity with an "ip" component: ok is false
// when it has none. Its name is quota.DefaultName for the default.
func parseIPQuotaEntity(cs []kmsg.AlterClientQuotasRequestEntryEntity) (name string, ok bool, err error) {
	ips := 0
	for _, c := range cs {
		if c.Type != quotaTypeIP {
			continue
		}
		ips++
		switch {
		case c.Name == nil:
			name = quota.DefaultName
		case *c.Name == "":
			return "", true, fmt.Errorf("%w: Empty ip not supported", errInvalidRequest)
		default:
			name = *c.Name
		}
	}
	switch {
	case ips == 0:
		return "", false, nil
	case ips > 1:
		return "", true, fmt.Errorf("%w: Invalid client quota entity, duplicate entity entry ip", errInvalidRequest)
	case len(cs) > 1:
		return "", true, fmt.Errorf("%w: Invalid quota entity combination, IP entity should not be used with user/client ID entity.", errInvalidRequest)
	}
	if name != quota.DefaultName {
		if err := quota.CheckIPName(name); err != nil {
			return "", true, err
		}
	}
	return name, true, nil
}

// alterIPQuota validates and applies the ops of ip entity name.
func (s *Server) alterIPQuota(name string, ops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	set, remove := false, false
	var v float64
	for _, op := range ops {
		if op.Remove {
			if op.Key != quota.IPKey {
				return fmt.Errorf("%w: Invalid configuration key %s", errInvalidRequest, op.Key)
			}
			set, remove = false, true
			continue
		}
		if err := quota.CheckIPValue(op.Key, op.Value); err != nil {
			return err
		}
		set, remove, v = true, false, math.Round(op.Value)
	}
	if validateOnly || !set && !remove {
		return nil
	}
	var applied float64
	err := s.ipQuotaStore.AlterIP(name, func(cur float64) (float64, error) {
		applied = cur
		if set {
			applied = v
		} else if remove {
			applied = 0
		}
		return applied, nil
	})
	if err != nil {
		return err
	}
	s.ipRates.Set(name, applied)
	return nil
}
