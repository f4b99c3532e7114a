package console

// Consumer groups: state and members from DescribeGroups (classic groups)
// or ConsumerGroupDescribe (consumer groups, KIP-848: the group and
// assignment epochs, each member's epoch, current and target assignment, as
// `sluice group describe` shows them), committed offsets from OffsetFetch,
// lag = end offset (high watermark) - committed, for the topics the
// principal may Describe.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice/sluice/acl"
)

// Group types, as ListGroups v5 names them.
const (
	groupTypeClassic  = "classic"
	groupTypeConsumer = "consumer" // KIP-848
)

type groupSummaryJSON struct {
	GroupID      string `json:"groupId"`
	Type         string `json:"type"` // groupTypeClassic or groupTypeConsumer
	State        string `json:"state"`
	ProtocolType string `json:"protocolType"`
	Protocol     string `json:"protocol"`
	Members      int    `json:"members"`
	Coordinator  int32  `json:"coordinator"`
	Lag          int64  `json:"lag"`
}

type assignmentJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

type memberJSON struct {
	MemberID    string           `json:"memberId"`
	InstanceID  *string          `json:"instanceId"`
	ClientID    string           `json:"clientId"`
	ClientHost  string           `json:"clientHost"`
	Assignments []assignmentJSON `json:"assignments"`

	// Consumer groups only (absent for classic ones).
	MemberEpoch          *int32           `json:"memberEpoch,omitempty"`
	RackID               *string          `json:"rackId,omitempty"`
	SubscribedTopics     []string         `json:"subscribedTopics,omitempty"`
	SubscribedTopicRegex *string          `json:"subscribedTopicRegex,omitempty"`
	TargetAssignments    []assignmentJSON `json:"targetAssignments,omitempty"`
}

type groupOffsetJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	EndOffset int64  `json:"endOffset"`
	Lag       int64  `json:"lag"`
	Metadata  string `json:"metadata"`
}

type groupJSON struct {
	GroupID      string            `json:"groupId"`
	Type         string            `json:"type"` // groupTypeClassic or groupTypeConsumer
	State        string            `json:"state"`
	ProtocolType string            `json:"protocolType"`
	Protocol     string            `json:"protocol"`
	Coordinator  int32             `json:"coordinator"`
	Members      []memberJSON      `json:"members"`
	Offsets      []groupOffsetJSON `json:"offsets"`
	Lag          int64             `json:"lag"`

	// Consumer groups only (absent for classic ones).
	GroupEpoch      *int32 `json:"groupEpoch,omitempty"`
	AssignmentEpoch *int32 `json:"assignmentEpoch,omitempty"`
}

// groupOffsets returns the committed offsets of groups, in visible
// topics, with the end offsets and lag of each.
func (q *request) groupOffsets(ctx context.Context, adm *kadm.Client, groups []string) (map[string][]groupOffsetJSON, error) {
	fetched := adm.FetchManyOffsets(ctx, groups...)
	topics := map[string]bool{}
	for _, f := range fetched {
		if f.Err != nil {
			continue
		}
		for t := range f.Fetched {
			if q.allowed(acl.OpDescribe, acl.ResourceTopic, t) {
				topics[t] = true
			}
		}
	}
	out := map[string][]groupOffsetJSON{}
	if len(topics) == 0 {
		return out, nil
	}
	ends, err := adm.ListEndOffsets(ctx, sortedKeys(topics)...)
	if err != nil {
		return nil, err
	}
	for g, f := range fetched {
		if f.Err != nil {
			continue
		}
		for t, ps := range f.Fetched {
			if !topics[t] {
				continue
			}
			for p, o := range ps {
				if o.Err != nil || o.At < 0 {
					continue // no commit: no row
				}
				row := groupOffsetJSON{Topic: t, Partition: p, Committed: o.At, EndOffset: -1, Lag: -1, Metadata: o.Metadata}
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					row.EndOffset = e.Offset
					row.Lag = max(0, e.Offset-o.At)
				}
				out[g] = append(out[g], row)
			}
		}
		slices.SortFunc(out[g], func(a, b groupOffsetJSON) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func totalLag(rows []groupOffsetJSON) int64 {
	var n int64
	for _, r := range rows {
		if r.Lag > 0 {
			n += r.Lag
		}
	}
	return n
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, q *request) {
	_, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	listed, err := adm.ListGroups(ctx)
	if err != nil && len(listed) == 0 { // a broker that did not answer hides only its groups
		writeKafkaError(w, err)
		return
	}
	var names, classic, consumer []string
	for _, g := range listed.Sorted() {
		if q.allowed(acl.OpDescribe, acl.ResourceGroup, g.Group) {
			names = append(names, g.Group)
			switch g.GroupType {
			case groupTypeConsumer:
				consumer = append(consumer, g.Group)
			case "share": // described by describeShareGroups
			default:
				classic = append(classic, g.Group)
			}
		}
	}
	out := struct {
		Groups []groupSummaryJSON `json:"groups"`
	}{Groups: []groupSummaryJSON{}}
	if len(names) == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	// Each type is described by its own API; a group that could not be
	// described keeps what ListGroups said of it.
	var described kadm.DescribedGroups
	if len(classic) > 0 {
		described, err = adm.DescribeGroups(ctx, classic...)
		if err != nil && len(described) == 0 {
			writeKafkaError(w, err)
			return
		}
	}
	var consumers kadm.DescribedConsumerGroups
	if len(consumer) > 0 {
		consumers, err = adm.DescribeConsumerGroups(ctx, consumer...)
		if err != nil && len(consumers) == 0 {
			writeKafkaError(w, err)
			return
		}
	}
	offsets, err := q.groupOffsets(ctx, adm, names)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	shared := describeShareGroups(ctx, adm, listed, names) // sharegroups.go
	for _, name := range names {
		l := listed[name]
		gs := groupSummaryJSON{GroupID: name, Type: cmp.Or(l.GroupType, groupTypeClassic), State: l.State,
			ProtocolType: l.ProtocolType, Coordinator: l.Coordinator, Lag: totalLag(offsets[name])}
		if d, ok := described[name]; ok && d.Err == nil {
			gs.State, gs.ProtocolType, gs.Protocol = d.State, d.ProtocolType, d.Protocol
			gs.Members, gs.Coordinator = len(d.Members), d.Coordinator.NodeID
		}
		if d, ok := consumers[name]; ok && d.Err == nil {
			gs.State, gs.ProtocolType, gs.Protocol = d.State, "consumer", d.AssignorName
			gs.Members, gs.Coordinator = len(d.Members), d.Coordinator.NodeID
		}
		if d, ok := shared[name]; ok && d.Err == nil {
			gs.State, gs.ProtocolType, gs.Protocol = d.GroupState, "share", d.Assignor
			gs.Members, gs.Coordinator = len(d.Members), d.Coordinator.NodeID
		}
		out.Groups = append(out.Groups, gs)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) describeGroup(w http.ResponseWriter, r *http.Request, q *request) {
	name := r.PathValue("group")
	if !validGroup(name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a valid group id", name), kerr.InvalidGroupID.Message)
		return
	}
	if !q.require(w, acl.OpDescribe, acl.ResourceGroup, name, "describe group", kerr.GroupAuthorizationFailed) {
		return
	}
	_, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	// A consumer group (KIP-848) is described with ConsumerGroupDescribe,
	// which answers GROUP_ID_NOT_FOUND for any other group; those, and
	// every group of a broker that does not serve it, with DescribeGroups.
	cgs, err := adm.DescribeConsumerGroups(ctx, name)
	if cg, ok := cgs[name]; err == nil && ok {
		switch {
		case cg.Err == nil:
			q.describeConsumerGroup(ctx, w, adm, cg)
			return
		case !errors.Is(cg.Err, kerr.GroupIDNotFound):
			writeKafkaError(w, cg.Err)
			return
		}
	}
	described, err := adm.DescribeGroups(ctx, name)
	if err != nil && len(described) == 0 {
		writeKafkaError(w, err)
		return
	}
	// share answers a share group (sharegroups.go), which DescribeGroups
	// answers Dead (GROUP_ID_NOT_FOUND from v6).
	share := func() bool {
		sd, _ := adm.DescribeShareGroups(ctx, name)
		if sd[name].Err == nil && sd[name].GroupState != "" && sd[name].GroupState != "Dead" {
			writeJSON(w, http.StatusOK, q.shareGroupJSON(sd[name]))
			return true
		}
		return false
	}
	d, ok := described[name]
	if !ok {
		writeKafkaError(w, kerr.GroupIDNotFound)
		return
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) && share() {
			return
		}
		writeKafkaError(w, d.Err)
		return
	}
	offsets, err := q.groupOffsets(ctx, adm, []string{name})
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	rows := offsets[name]
	if (d.State == "Dead" || d.State == "") && len(d.Members) == 0 && len(rows) == 0 {
		if share() {
			return
		}
		writeError(w, http.StatusNotFound, "no such group: "+name, kerr.GroupIDNotFound.Message)
		return
	}
	out := groupJSON{
		GroupID: name, Type: groupTypeClassic, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: d.Coordinator.NodeID, Members: []memberJSON{}, Offsets: rows, Lag: totalLag(rows),
	}
	if out.Offsets == nil {
		out.Offsets = []groupOffsetJSON{}
	}
	for _, m := range d.Members {
		mj := memberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignments: []assignmentJSON{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				if q.allowed(acl.OpDescribe, acl.ResourceTopic, t.Topic) {
					mj.Assignments = append(mj.Assignments, assignmentJSON{Topic: t.Topic, Partitions: nonNil(t.Partitions)})
				}
			}
		}
		out.Members = append(out.Members, mj)
	}
	writeJSON(w, http.StatusOK, out)
}

// describeConsumerGroup answers a consumer group (KIP-848) described by
// ConsumerGroupDescribe: what `sluice group describe` prints of it, the
// group and assignment epochs and each member's epoch, client, host,
// subscription, current and target assignment, with its committed offsets
// and lag. Topics the principal may not Describe are left out of the
// assignments and offsets.
func (q *request) describeConsumerGroup(ctx context.Context, w http.ResponseWriter, adm *kadm.Client, g kadm.DescribedConsumerGroup) {
	offsets, err := q.groupOffsets(ctx, adm, []string{g.Group})
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	rows := offsets[g.Group]
	if rows == nil {
		rows = []groupOffsetJSON{}
	}
	out := groupJSON{
		GroupID: g.Group, Type: groupTypeConsumer, State: g.State, ProtocolType: "consumer", Protocol: g.AssignorName,
		Coordinator: g.Coordinator.NodeID, Members: []memberJSON{}, Offsets: rows, Lag: totalLag(rows),
		GroupEpoch: &g.Epoch, AssignmentEpoch: &g.AssignmentEpoch,
	}
	for _, m := range g.Members {
		mj := memberJSON{
			MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			MemberEpoch: &m.MemberEpoch, RackID: m.RackID, SubscribedTopicRegex: m.SubscribedTopicRegex,
			Assignments: q.visibleAssignments(m.Assignment), TargetAssignments: q.visibleAssignments(m.TargetAssignment),
			SubscribedTopics: []string{},
		}
		for _, t := range m.SubscribedTopics {
			if q.allowed(acl.OpDescribe, acl.ResourceTopic, t) {
				mj.SubscribedTopics = append(mj.SubscribedTopics, t)
			}
		}
		slices.Sort(mj.SubscribedTopics)
		out.Members = append(out.Members, mj)
	}
	writeJSON(w, http.StatusOK, out)
}

// visibleAssignments is s, sorted by topic and partition, without the
// topics the principal may not Describe; never nil.
func (q *request) visibleAssignments(s kadm.TopicsSet) []assignmentJSON {
	out := []assignmentJSON{}
	for _, tp := range s.Sorted() {
		if q.allowed(acl.OpDescribe, acl.ResourceTopic, tp.Topic) {
			ps := slices.Clone(tp.Partitions)
			slices.Sort(ps)
			out = append(out, assignmentJSON{Topic: tp.Topic, Partitions: nonNil(ps)})
		}
	}
	return out
}
