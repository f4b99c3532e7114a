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
//	v5  types filter (KIP-848), group type in the answer
//
// Both kinds of group are listed, as Kafka 4.x's
// GroupMetadataManager.listGroups: classic groups with their protocol type
// (empty for groups that only hold offsets) and type "classic"; consumer
// groups (KIP-848) with protocol type "consumer", type "consumer" and
// their ConsumerGroupState (Empty, Assigning, Reconciling, Stable); share
// groups (KIP-932) with protocol type and type "share" and their state
// (Empty, Stable). The
// memberless classic group that holds a consumer group's offsets is not a
// group of its own and is not listed. Filters match case-insensitively (a
// state filter trimmed, as Kafka's); a type filter that names no known
// type matches nothing.
// While a __consumer_offsets partition led here is loading
// (Options.Loading), the answer is COORDINATOR_LOAD_IN_PROGRESS, as Kafka's,
// rather than a list without that partition's groups.

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
	var states, types []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	if req.Version >= 5 {
		types = req.TypesFilter
	}
	for _, s := range c.summaries() {
		if len(states) > 0 && !slices.ContainsFunc(states, func(st string) bool { return strings.EqualFold(strings.TrimSpace(st), s.state) }) {
			continue
		}
		if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, s.groupType) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = s.name, s.protocolType, s.state, s.groupType
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// groupSummary is a group's name, state, protocol type and group type.
type groupSummary struct{ name, state, protocolType, groupType string }

// summaries returns every live group of both types, sorted by name.
func (c *Coordinator) summaries() []groupSummary {
	cs := c.consumerSummaries()
	isConsumer := make(map[string]bool, len(cs))
	out := make([]groupSummary, 0, len(cs))
	for _, s := range cs {
		isConsumer[s.name] = true
		out = append(out, groupSummary{s.name, s.state, consumerProtocolType, ConsumerGroupType})
	}
	for _, s := range c.shareSummaries() {
		isConsumer[s.name] = true
		out = append(out, groupSummary{s.name, s.state, ShareGroupType, ShareGroupType})
	}
	for _, g := range c.groupList() {
		g.mu.Lock()
		if g.state != stateDead && !isConsumer[g.name] {
			out = append(out, groupSummary{g.name, g.state.String(), g.protocolType, ClassicGroupType})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
