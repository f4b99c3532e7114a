package consumer

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sluice/sluice/group/consumer/assignor"
	"github.com/sluice/sluice/offsets"
)

// Record is one __consumer_offsets record of a consumer group: its key and
// its value, nil for a tombstone. It is offsets.ConsumerRecord, so the
// coordinator hands records to offsets.Coordinator.PersistConsumer as they
// are.
type Record = offsets.ConsumerRecord

// ResolvedRegex is what a regex subscription resolved to
// (ConsumerGroupRegularExpression records).
type ResolvedRegex struct {
	Topics    []string
	Version   int64 // metadata version it was resolved at
	Timestamp int64 // ms
}

// GroupEpochRecord is the ConsumerGroupMetadata record of g's epoch.
func GroupEpochRecord(g *Group) Record {
	v := offsets.NewConsumerGroupMetadataValue()
	v.Epoch = g.Epoch
	return Record{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupMetadataType, Group: g.ID}, Value: v}
}

// MemberRecords are the records of m, in the order Kafka writes a member's
// change: its metadata (subscription, client), then its current
// assignment and epochs.
func MemberRecords(groupID string, m Member) []Record {
	md := offsets.ConsumerGroupMemberMetadataValue{
		InstanceID: nullable(m.InstanceID), RackID: nullable(m.RackID),
		ClientID: m.ClientID, ClientHost: m.ClientHost,
		SubscribedTopicNames: m.SubscribedTopicNames, SubscribedTopicRegex: nullable(m.SubscribedTopicRegex),
		RebalanceTimeoutMs: m.RebalanceTimeoutMs, ServerAssignor: nullable(m.ServerAssignor),
		ClassicMemberMetadata: m.Classic,
	}
	ca := offsets.ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.MemberEpoch, PreviousMemberEpoch: m.PreviousMemberEpoch, State: int8(m.State),
		AssignedPartitions:          toRecord(m.Assigned),
		PartitionsPendingRevocation: toRecord(m.PendingRevocation),
	}
	return []Record{
		{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupMemberMetadataType, Group: groupID, Member: m.ID}, Value: md},
		{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupCurrentMemberAssignmentType, Group: groupID, Member: m.ID}, Value: ca},
	}
}

// MemberTombstones are the records that remove member id, in Kafka's
// order: current assignment, target assignment, then metadata (a replay
// that sees the metadata tombstone knows the assignment is gone).
func MemberTombstones(groupID, id string) []Record {
	return []Record{
		{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupCurrentMemberAssignmentType, Group: groupID, Member: id}},
		{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupTargetAssignmentMemberType, Group: groupID, Member: id}},
		{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupMemberMetadataType, Group: groupID, Member: id}},
	}
}

// TargetRecords are the records of g's target assignment: one per member
// (in member id order), then the assignment epoch, as Kafka writes them so
// that a replay sees the epoch only once the whole target is there.
func TargetRecords(g *Group) []Record {
	var out []Record
	for _, id := range slices.Sorted(maps.Keys(g.Target)) {
		out = append(out, Record{
			Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupTargetAssignmentMemberType, Group: g.ID, Member: id},
			Value: offsets.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: toRecord(g.Target[id])},
		})
	}
	return append(out, Record{
		Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupTargetAssignmentMetadataType, Group: g.ID},
		Value: offsets.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: g.AssignmentEpoch},
	})
}

// RegexRecord is the record of a resolved regex (nil r: its tombstone).
func RegexRecord(groupID, regex string, r *ResolvedRegex) Record {
	rec := Record{Key: offsets.ConsumerKey{Type: offsets.ConsumerGroupRegularExpressionType, Group: groupID, Regex: regex}}
	if r != nil {
		rec.Value = offsets.ConsumerGroupRegularExpressionValue{Topics: r.Topics, Version: r.Version, Timestamp: r.Timestamp}
	}
	return rec
}

// Replay applies one record of group g, as Kafka's GroupMetadataManager
// replays __consumer_offsets on load: the group epoch; a member's metadata
// (creating the member) or its removal; its current assignment, epochs and
// state (a tombstone leaves it at epoch -1 with nothing); a member's target
// assignment; the target assignment epoch; resolved regexes. Partition
// metadata records (type 4) are accepted and ignored: Kafka 4.1+ only
// tombstones them and recomputes the metadata. A record of another group,
// or a member tombstone before its assignment tombstone, is an error.
func (g *Group) Replay(r Record) error {
	if r.Key.Group != g.ID {
		return fmt.Errorf("consumer: record of group %q replayed into group %q", r.Key.Group, g.ID)
	}
	if r.Value != nil && r.Value.RecordType() != r.Key.Type {
		return fmt.Errorf("consumer: record type %d with a value of type %d", r.Key.Type, r.Value.RecordType())
	}
	switch r.Key.Type {
	case offsets.ConsumerGroupMetadataType:
		if r.Value == nil {
			return nil // a tombstone deletes the group: the caller drops g
		}
		v, err := valueAs[offsets.ConsumerGroupMetadataValue](r)
		if err != nil {
			return err
		}
		g.Epoch = v.Epoch
	case offsets.ConsumerGroupPartitionMetadataType:
	case offsets.ConsumerGroupMemberMetadataType:
		old, had := g.members[r.Key.Member]
		if r.Value == nil {
			if had && old.MemberEpoch != LeaveEpoch {
				return fmt.Errorf("consumer: tombstone of member %s before the tombstone of its current assignment", r.Key.Member)
			}
			g.RemoveMember(r.Key.Member)
			return nil
		}
		v, err := valueAs[offsets.ConsumerGroupMemberMetadataValue](r)
		if err != nil {
			return err
		}
		m := old
		if !had {
			m = Member{ID: r.Key.Member}
		}
		m.InstanceID, m.RackID = deref(v.InstanceID), deref(v.RackID)
		m.ClientID, m.ClientHost = v.ClientID, v.ClientHost
		m.SubscribedTopicNames, m.SubscribedTopicRegex = v.SubscribedTopicNames, deref(v.SubscribedTopicRegex)
		m.RebalanceTimeoutMs, m.ServerAssignor = v.RebalanceTimeoutMs, deref(v.ServerAssignor)
		m.Classic = v.ClassicMemberMetadata
		return g.UpdateMember(m)
	case offsets.ConsumerGroupCurrentMemberAssignmentType:
		m, had := g.members[r.Key.Member]
		if !had {
			if r.Value == nil {
				return nil
			}
			m = Member{ID: r.Key.Member}
		}
		if r.Value == nil {
			m.MemberEpoch, m.PreviousMemberEpoch = LeaveEpoch, LeaveEpoch
			m.State, m.Assigned, m.PendingRevocation = Stable, assignor.Assignment{}, assignor.Assignment{}
			return g.UpdateMember(m)
		}
		v, err := valueAs[offsets.ConsumerGroupCurrentMemberAssignmentValue](r)
		if err != nil {
			return err
		}
		m.MemberEpoch, m.PreviousMemberEpoch, m.State = v.MemberEpoch, v.PreviousMemberEpoch, MemberStateOf(v.State)
		m.Assigned, m.PendingRevocation = fromRecord(v.AssignedPartitions), fromRecord(v.PartitionsPendingRevocation)
		return g.UpdateMember(m)
	case offsets.ConsumerGroupTargetAssignmentMemberType:
		if r.Value == nil {
			delete(g.Target, r.Key.Member)
			return nil
		}
		v, err := valueAs[offsets.ConsumerGroupTargetAssignmentMemberValue](r)
		if err != nil {
			return err
		}
		g.Target[r.Key.Member] = fromRecord(v.TopicPartitions)
	case offsets.ConsumerGroupTargetAssignmentMetadataType:
		if r.Value == nil {
			return nil
		}
		v, err := valueAs[offsets.ConsumerGroupTargetAssignmentMetadataValue](r)
		if err != nil {
			return err
		}
		g.AssignmentEpoch = v.AssignmentEpoch
	case offsets.ConsumerGroupRegularExpressionType:
		if g.Regexes == nil {
			g.Regexes = map[string]ResolvedRegex{}
		}
		if r.Value == nil {
			delete(g.Regexes, r.Key.Regex)
			return nil
		}
		v, err := valueAs[offsets.ConsumerGroupRegularExpressionValue](r)
		if err != nil {
			return err
		}
		g.Regexes[r.Key.Regex] = ResolvedRegex{Topics: v.Topics, Version: v.Version, Timestamp: v.Timestamp}
	default:
		return fmt.Errorf("consumer: record type %d is not a consumer group record", r.Key.Type)
	}
	return nil
}

// valueAs returns r's value as a T (the value type DecodeConsumerValue
// returns for r's key), or an error for any other type, pointers included.
func valueAs[T offsets.ConsumerValue](r Record) (T, error) {
	v, ok := r.Value.(T)
	if !ok {
		return v, fmt.Errorf("consumer: record type %d holds a %T value", r.Key.Type, r.Value)
	}
	return v, nil
}

// toRecord turns an assignment into record topic partitions, topics in
// TopicID order and partitions ascending, so equal assignments encode to
// equal bytes.
func toRecord(a assignor.Assignment) []offsets.ConsumerTopicPartitions {
	if len(a) == 0 {
		return nil
	}
	ids := slices.SortedFunc(maps.Keys(a), assignor.TopicID.Compare)
	out := make([]offsets.ConsumerTopicPartitions, 0, len(ids))
	for _, t := range ids {
		ps := slices.Clone(a[t])
		slices.Sort(ps)
		out = append(out, offsets.ConsumerTopicPartitions{TopicID: t, Partitions: ps})
	}
	return out
}

// fromRecord is toRecord's inverse; partitions are sorted and deduplicated
// (a record written by anyone may hold them in any order), and a topic
// listed twice is merged.
func fromRecord(tps []offsets.ConsumerTopicPartitions) assignor.Assignment {
	a := assignor.Assignment{}
	for _, tp := range tps {
		if len(tp.Partitions) == 0 {
			continue
		}
		ps := append(slices.Clone(a[tp.TopicID]), tp.Partitions...)
		slices.Sort(ps)
		a[tp.TopicID] = slices.Compact(ps)
	}
	return a
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TargetMemberRecord is the record of member id's part of the target
// assignment.
func TargetMemberRecord(groupID, id string, a assignor.Assignment) Record {
	return Record{
		Key:   offsets.ConsumerKey{Type: offsets.ConsumerGroupTargetAssignmentMemberType, Group: groupID, Member: id},
		Value: offsets.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: toRecord(a)},
	}
}
