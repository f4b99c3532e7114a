package group

import (
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/internal/errcode"
)

// ListGroups (key 16), versions 0-5.
//
//	v1  throttle time
//	v3  flexible
//	v4  states filter (KIP-518), group state in the answer
//	v5  types filter (KIP-848), group type in the answer: always "classic"
//
// Groups that only hold offsets are listed too, with an empty protocol type.
// While a __consumer_offsets partition led here is loading
// (Options.Loading), the answer is COORDINATOR_LOAD_IN_PROGRESS, as Kafka's,
// rather than a list without that partition's groups.

// classicGroupType is the group type of every group here (KIP-848 naming).
const classicGroupType = "classic"

func (c *Coordinator) listGroups(req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if err := c.status(); err != nil {
		resp.ErrorCode = errcode.Code(err)
		return resp
	}
	if c.opts.Loading != nil && c.opts.Loading() {
		resp.ErrorCode = errcode.Code(errLoadInProgress)
		return resp
	}
	if req.Version >= 5 && len(req.TypesFilter) > 0 &&
		!slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, classicGroupType) }) {
		return resp
	}
	for _, s := range c.summaries() {
		if req.Version >= 4 && len(req.StatesFilter) > 0 &&
			!slices.ContainsFunc(req.StatesFilter, func(st string) bool { return strings.EqualFold(st, s.state) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = s.name, s.protocolType, s.state, classicGroupType
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// groupSummary is a group's name, state and protocol type.
type groupSummary struct{ name, state, protocolType string }

// summaries returns every live group, sorted by name.
func (c *Coordinator) summaries() []groupSummary {
	groups := c.groupList()
	out := make([]groupSummary, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if g.state != stateDead {
			out = append(out, groupSummary{g.name, g.state.String(), g.protocolType})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
