package group

import (
	"bytes"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/metastore"
)

// state is a classic group's state, as in Kafka's GroupMetadata:
//
//	Empty -> PreparingRebalance            a member joins
//	PreparingRebalance -> CompletingRebalance  every member rejoined, or the
//	                                       rebalance timeout passed
//	PreparingRebalance -> Empty            no member rejoined
//	CompletingRebalance -> Stable          the leader's SyncGroup is stored
//	CompletingRebalance|Stable -> PreparingRebalance  a member joins, leaves,
//	                                       changes metadata or expires
//	Empty -> Dead                          deleted, or its offsets expired
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String returns the name Kafka uses, as shown by DescribeGroups/ListGroups
// and stored in metastore.Group.State.
func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	case stateDead:
		return "Dead"
	}
	return "Unknown"
}

// parseState is the inverse of state.String; ok is false for other names.
func parseState(s string) (state, bool) {
	for st := stateEmpty; st <= stateDead; st++ {
		if st.String() == s {
			return st, true
		}
	}
	return stateEmpty, false
}

// consumerProtocolType is the protocol type of Kafka consumers, whose member
// metadata is a ConsumerMemberMetadata naming the subscribed topics.
const consumerProtocolType = "consumer"

// group is one classic consumer group. Every field is guarded by mu.
//
// Invariants:
//   - members is empty iff state is Empty or Dead.
//   - leader is "" iff members is empty; otherwise members[leader] exists.
//   - static[m.instanceID] == m.id for every static member m, and only then.
//   - in PreparingRebalance, rebalanceTimer is set (the join deadline).
type group struct {
	name string
	mu   sync.Mutex

	state     state
	stateTime time.Time // when state last changed

	protocolType string // "" for a group that only stores offsets
	protocol     string // chosen in the current generation; "" when Empty
	generation   int32
	leader       string

	members map[string]*member
	static  map[string]string         // group.instance.id -> member id
	pending map[string]*pendingMember // KIP-394: ids handed out, not yet joined
	// pendingSync holds the members that got the JoinGroup answer of the
	// current generation but have not sent SyncGroup yet.
	pendingSync map[string]struct{}
	joinSeq     uint64 // orders members by arrival (leader fallback, answers)

	// newMemberAdded extends the initial rebalance delay of a new group.
	newMemberAdded bool
	// initialDelay is set while the join phase waits out
	// group.initial.rebalance.delay.ms: only the timer ends it then, not
	// the last member joining.
	initialDelay bool
	// rebalanceSeq and syncSeq invalidate the callbacks of stopped timers.
	rebalanceSeq   uint64
	rebalanceTimer Timer
	syncSeq        uint64
	syncTimer      Timer

	// subscribed is the union of the topics the consumer-protocol members
	// subscribe to in this generation; nil when unknown (not a consumer group
	// or undecodable metadata), in which case every topic counts as subscribed.
	subscribed map[string]struct{}

	offsets map[metastore.TopicPartition]metastore.CommittedOffset
	// pendingTxn holds the offsets committed in transactions that have not
	// ended: producer id -> partition -> offset (txn.go). No inner map is
	// empty.
	pendingTxn map[int64]map[metastore.TopicPartition]metastore.PendingTxnOffset
}

// member is one member of a group. Guarded by its group's mu.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	rebalanceTimeout     time.Duration
	sessionTimeout       time.Duration
	protocolType         string
	protocols            []metastore.GroupProtocol
	assignment           []byte
	seq                  uint64 // arrival order in the group

	// isNew marks a member that joined and has not yet been answered; it
	// may expire while it waits (Kafka's new-member join timeout).
	isNew bool
	// joinCh receives the answer to the JoinGroup the member is waiting on;
	// non-nil exactly while it waits. syncCh likewise for SyncGroup. Both
	// are buffered (1), so answering never blocks.
	joinCh chan joinResult
	syncCh chan syncResult

	hbSeq   uint64 // invalidates callbacks of stopped heartbeat timers
	hbTimer Timer
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED.
type pendingMember struct {
	seq   uint64
	timer Timer
}

// joinResult is what a waiting JoinGroup is answered with.
type joinResult struct {
	err            error // nil: joined
	memberID       string
	generation     int32
	protocolType   string
	protocol       string
	hasProtocol    bool
	leader         string
	skipAssignment bool
	members        []kmsg.JoinGroupResponseMember
}

// syncResult is what a waiting SyncGroup is answered with.
type syncResult struct {
	err          error // nil: synced
	protocolType string
	protocol     string
	assignment   []byte
}

func newGroup(name string, now time.Time) *group {
	return &group{
		name:        name,
		state:       stateEmpty,
		stateTime:   now,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]*pendingMember),
		pendingSync: make(map[string]struct{}),
		offsets:     make(map[metastore.TopicPartition]metastore.CommittedOffset),
		pendingTxn:  make(map[int64]map[metastore.TopicPartition]metastore.PendingTxnOffset),
	}
}

// transitionLocked moves g to st, stamping the state time.
// REQUIRES: g.mu held.
func (g *group) transitionLocked(st state, now time.Time) {
	g.state = st
	g.stateTime = now
}

// sortedMembers returns the members in arrival order.
// REQUIRES: g.mu held.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// isStaticMemberFenced reports whether instanceID belongs to a static member
// other than memberID (Kafka's isStaticMemberFenced).
// REQUIRES: g.mu held.
func (g *group) isStaticMemberFenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// validateMember returns the error for an operation by memberID (with the
// optional instance id) on g: errFencedInstanceID, errUnknownMemberID or
// nil.
// REQUIRES: g.mu held.
func (g *group) validateMember(memberID string, instanceID *string) error {
	if g.isStaticMemberFenced(instanceID, memberID) {
		return errFencedInstanceID
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	return nil
}

// supportsProtocols reports whether a member with protocolType and protocols
// may join g: an empty group takes any non-empty type and protocol list;
// otherwise the type must match and one of the protocols must be supported
// by every current member.
// REQUIRES: g.mu held.
func (g *group) supportsProtocols(protocolType string, protocols []metastore.GroupProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedByAll(p.Name) {
			return true
		}
	}
	return false
}

// supportedByAll reports whether every member lists the protocol name.
// REQUIRES: g.mu held.
func (g *group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !m.supports(name) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol of the next generation as Kafka's
// GroupMetadata.selectProtocol does: among the protocols every member
// supports, each member votes for the first of its own preference list;
// the most votes win. Ties go to the candidate the earliest member prefers
// (Kafka leaves them arbitrary).
// REQUIRES: g.mu held, len(g.members) > 0.
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	votes := make(map[string]int)
	var order []string
	for _, m := range ms {
		for _, p := range m.protocols {
			if g.supportedByAll(p.Name) {
				if votes[p.Name] == 0 {
					order = append(order, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// notYetRejoined returns the members not waiting on a JoinGroup.
// REQUIRES: g.mu held.
func (g *group) notYetRejoined() []*member {
	var out []*member
	for _, m := range g.sortedMembers() {
		if m.joinCh == nil {
			out = append(out, m)
		}
	}
	return out
}

// allJoined reports whether every member is waiting on a JoinGroup and no
// KIP-394 pending member is outstanding (Kafka's hasAllMembersJoined).
// REQUIRES: g.mu held.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if m.joinCh == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// rebalanceTimeout is the largest rebalance timeout of the members.
// REQUIRES: g.mu held.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// computeSubscribed derives g.subscribed from the members' metadata for the
// chosen protocol (Kafka's computeSubscribedTopics).
// REQUIRES: g.mu held.
func (g *group) computeSubscribed() {
	g.subscribed = nil
	if g.protocolType != consumerProtocolType || g.protocol == "" {
		return
	}
	topics := make(map[string]struct{})
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadata(g.protocol)); err != nil {
			return
		}
		for _, t := range md.Topics {
			topics[t] = struct{}{}
		}
	}
	g.subscribed = topics
}

// isSubscribed reports whether a member consumes topic; true when unknown.
// REQUIRES: g.mu held.
func (g *group) isSubscribed(topic string) bool {
	if g.subscribed == nil {
		return len(g.members) > 0
	}
	_, ok := g.subscribed[topic]
	return ok
}

// metadata returns the member's metadata for protocol name, or nil.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			if p.Metadata == nil {
				return []byte{}
			}
			return p.Metadata
		}
	}
	return nil
}

// supports reports whether the member lists protocol name.
func (m *member) supports(name string) bool {
	return slices.ContainsFunc(m.protocols, func(p metastore.GroupProtocol) bool { return p.Name == name })
}

// matches reports whether protocols equal the member's, names, order and
// metadata (Kafka's MemberMetadata.matches).
func (m *member) matches(protocols []metastore.GroupProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b metastore.GroupProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// toStore converts g to its saved form.
// REQUIRES: g.mu held.
func (g *group) toStore() metastore.Group {
	sg := metastore.Group{
		Name: g.name, State: g.state.String(), ProtocolType: g.protocolType,
		Protocol: g.protocol, Generation: g.generation, Leader: g.leader,
		StateTime: g.stateTime,
	}
	for _, m := range g.sortedMembers() {
		sg.Members = append(sg.Members, metastore.GroupMember{
			MemberID: m.id, GroupInstanceID: m.instanceID,
			ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeout: m.rebalanceTimeout, SessionTimeout: m.sessionTimeout,
			ProtocolType: m.protocolType, Protocols: m.protocols, Assignment: m.assignment,
		})
	}
	return sg
}

// fromStore rebuilds a group saved by toStore. As Kafka's loadGroup does, a
// group with members comes back Stable, one without comes back Empty: a
// rebalance in progress at the crash restarts when a member next joins.
func fromStore(sg metastore.Group) *group {
	g := newGroup(sg.Name, sg.StateTime)
	g.protocolType = sg.ProtocolType
	g.generation = sg.Generation
	if st, ok := parseState(sg.State); ok && st == stateDead {
		g.state = stateDead
	}
	for _, sm := range sg.Members {
		g.joinSeq++
		m := &member{
			id: sm.MemberID, instanceID: sm.GroupInstanceID,
			clientID: sm.ClientID, clientHost: sm.ClientHost,
			rebalanceTimeout: sm.RebalanceTimeout, sessionTimeout: sm.SessionTimeout,
			protocolType: sm.ProtocolType, protocols: sm.Protocols, assignment: sm.Assignment,
			seq: g.joinSeq,
		}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = stateStable
		g.protocol = sg.Protocol
		g.leader = sg.Leader
		if _, ok := g.members[g.leader]; !ok {
			g.leader = g.sortedMembers()[0].id
		}
		g.computeSubscribed()
	} else if g.state != stateDead {
		g.state = stateEmpty
	}
	return g
}
