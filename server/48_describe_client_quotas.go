package server

// DescribeClientQuotas (key 48), served v0-v1 (KIP-546).
//
//	v1: flexible
//
// The filter is a list of components, one per entity type ("user",
// "client-id"), each matching an exact name (match type 0), the default
// entity (1: a null name) or any entity that has that type (2, "specified"),
// as Kafka's ClientQuotasImage.describe: an entity matches when every
// component matches it; strict also requires it to have no other type.
// No components match every entity unless strict. A type given twice, an
// empty type, a match string where none belongs (or none where one does)
// or an unknown match type is INVALID_REQUEST; an unknown entity type is
// UNSUPPORTED_VERSION, as Kafka answers. "ip" entities (KIP-612's
// connection_creation_rate, ipquota.go) match an ip component the same way;
// an ip component with a user or client-id one is INVALID_REQUEST, and with
// no components (not strict) every entity is described, ip ones included.
//
// Needs DescribeConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED).
// Entities with no quota (a user with SCRAM credentials only) are not
// described.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/quota"
)

// The entity types and match types of the client quota APIs (Kafka's
// ClientQuotaEntity and ClientQuotaFilterComponent).
const (
	quotaTypeUser     = "user"
	quotaTypeClientID = "client-id"
	quotaTypeIP       = "ip"

	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

// quotaFilter is a parsed DescribeClientQuotas filter for one entity
// type: absent, an exact component (a name or the default), or any.
type quotaFilter struct {
	set  bool
	any  bool
	want quota.Component
}

func (f quotaFilter) matches(c quota.Component) bool {
	switch {
	case !f.set:
		return true
	case f.any:
		return c.Set
	}
	return c == f.want
}

func handleDescribeClientQuotas(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(err error) (*response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Entries = nil
		return kresp(resp), nil
	}
	if !s.az.allowedCluster(rc, acl.OpDescribeConfigs) {
		return fail(errClusterAuthorization)
	}
	var user, client, ip quotaFilter
	for _, c := range r.Components {
		var f *quotaFilter
		switch c.EntityType {
		case "":
			return fail(fmt.Errorf("%w: Invalid empty entity type.", errInvalidRequest))
		case quotaTypeUser:
			f = &user
		case quotaTypeClientID:
			f = &client
		case quotaTypeIP:
			f = &ip
		default:
			return fail(fmt.Errorf("%w: Unsupported entity type %s", errUnsupportedVersion, c.EntityType))
		}
		if f.set {
			return fail(fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", errInvalidRequest, c.EntityType))
		}
		if err := checkQuotaMatch(c); err != nil {
			return fail(err)
		}
		f.set = true
		switch c.MatchType {
		case quotaMatchExact:
			f.want = quota.Named(*c.Match)
		case quotaMatchDefault:
			f.want = quota.Default
		default:
			f.any = true
		}
	}
	if ip.set && (user.set || client.set) {
		return fail(fmt.Errorf("%w: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.", errInvalidRequest))
	}
	if ip.set || !r.Strict && !user.set && !client.set {
		ips, err := s.ipQuotaStore.ListIPs()
		if err != nil {
			return fail(err)
		}
		resp.Entries = describeIPQuotas(ips, ip)
		if ip.set {
			return kresp(resp), nil
		}
	}
	all, err := s.quotaStore.List()
	if err != nil {
		return fail(err)
	}
	var matched []quota.Entity
	for e := range all {
		if !user.matches(e.User) || !client.matches(e.ClientID) {
			continue
		}
		// strict: the entity has exactly the filter's types.
		if r.Strict && (e.User.Set != user.set || e.ClientID.Set != client.set) {
			continue
		}
		matched = append(matched, e)
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].String() < matched[j].String() })
	for _, e := range matched {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		add := func(typ string, c quota.Component) {
			if !c.Set {
				return
			}
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = typ
			if !c.Default {
				name := c.Name
				ent.Name = &name
			}
			entry.Entity = append(entry.Entity, ent)
		}
		add(quotaTypeUser, e.User)
		add(quotaTypeClientID, e.ClientID)
		v := all[e]
		for t, k := range quota.Keys {
			if v[t] > 0 {
				val := kmsg.NewDescribeClientQuotasResponseEntryValue()
				val.Key, val.Value = k, v[t]
				entry.Values = append(entry.Values, val)
			}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return kresp(resp), nil
}

// describeIPQuotas returns the entries of the ip entities that f matches
// (any when unset), sorted by name, the default first.
func describeIPQuotas(ips map[string]float64, f quotaFilter) []kmsg.DescribeClientQuotasResponseEntry {
	names := make([]string, 0, len(ips))
	for name := range ips {
		c := quota.Named(name)
		if name == quota.DefaultName {
			c = quota.Default
		}
		if f.matches(c) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []kmsg.DescribeClientQuotasResponseEntry
	for _, name := range names {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		ent.Type = quotaTypeIP
		if name != quota.DefaultName {
			n := name
			ent.Name = &n
		}
		entry.Entity = append(entry.Entity, ent)
		val := kmsg.NewDescribeClientQuotasResponseEntryValue()
		val.Key, val.Value = quota.IPKey, ips[name]
		entry.Values = append(entry.Values, val)
		out = append(out, entry)
	}
	return out
}

// checkQuotaMatch checks a filter component's match type against its
// match string, as Kafka does.
func checkQuotaMatch(c kmsg.DescribeClientQuotasRequestComponent) error {
	switch c.MatchType {
	case quotaMatchExact:
		if c.Match == nil {
			return fmt.Errorf("%w: Request specified MATCH_TYPE_EXACT, but set match string to null.", errInvalidRequest)
		}
	case quotaMatchDefault:
		if c.Match != nil {
			return fmt.Errorf("%w: Request specified MATCH_TYPE_DEFAULT, but also specified a match string.", errInvalidRequest)
		}
	case quotaMatchSpecified:
		if c.Match != nil {
			return fmt.Errorf("%w: Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.", errInvalidRequest)
		}
	default:
		return fmt.Errorf("%w: Unknown match type %d", errInvalidRequest, c.MatchType)
	}
	return nil
}
