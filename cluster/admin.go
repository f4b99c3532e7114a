package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/sluice/sluice/internal/topicname"
)

// liveBrokerIDs lists the registered brokers.
func (n *Node) liveBrokerIDs() ([]int32, error) {
	kids, err := n.zk.children(brokerIDsPath)
	if err != nil {
		return nil, fmt.Errorf("cluster: list brokers: %w", err)
	}
	var ids []int32
	for _, k := range kids {
		if id, err := strconv.Atoi(k); err == nil {
			ids = append(ids, int32(id))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// CreateTopic creates a topic; it may be called on any broker. Replicas are
// assigned across the live brokers with Kafka's rack-unaware round robin
// (random start, so leaders spread across topics), the configs go to
// /config/topics/<name> and the assignment, with topicID (a random UUID
// when zero), to /brokers/topics/<name>. The controller sees the new topic
// through its watch and brings the partitions online asynchronously.
// Errors: ErrInvalidTopic, ErrInvalidPartitions, ErrTopicExists (also
// while a deletion of the name is pending), ErrInvalidReplicationFactor
// (rf < 1 or more than the live brokers).
func (n *Node) CreateTopic(ctx context.Context, name string, partitions, rf int, configs map[string]string, topicID [16]byte) error {
	return n.createTopic(ctx, name, partitions, rf, nil, configs, topicID)
}

// CreateTopicAssigned is CreateTopic with a manual replica assignment
// (kafka-topics.sh --replica-assignment): assignment[p] lists partition p's
// replicas, preferred leader first. Every partition needs the same number
// of distinct replicas, all of them live brokers (Kafka's
// validateReplicaAssignment); otherwise ErrInvalidReplicaAssignment.
func (n *Node) CreateTopicAssigned(ctx context.Context, name string, assignment [][]int32, configs map[string]string, topicID [16]byte) error {
	if len(assignment) == 0 {
		return fmt.Errorf("%w: no partitions", ErrInvalidPartitions)
	}
	return n.createTopic(ctx, name, len(assignment), len(assignment[0]), assignment, configs, topicID)
}

func (n *Node) createTopic(ctx context.Context, name string, partitions, rf int, assignment [][]int32, configs map[string]string, topicID [16]byte) error {
	if err := topicname.Validate(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTopic, err)
	}
	if partitions < 1 {
		return fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if ok, _, err := n.zk.conn.Exists(n.zk.p(topicPath(name))); err != nil {
		return fmt.Errorf("cluster: create topic %s: %w", name, err)
	} else if ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if ok, _, err := n.zk.conn.Exists(n.zk.p(deleteTopicPath(name))); err != nil {
		return fmt.Errorf("cluster: create topic %s: %w", name, err)
	} else if ok {
		return fmt.Errorf("%w: %s is marked for deletion", ErrTopicExists, name)
	}
	live, err := n.liveBrokerIDs()
	if err != nil {
		return err
	}
	if assignment != nil {
		if err := ValidateAssignment(assignment, rf, live); err != nil {
			return err
		}
	} else if rf < 1 || rf > len(live) {
		return fmt.Errorf("%w: %d with %d live brokers", ErrInvalidReplicationFactor, rf, len(live))
	}
	if topicID == ([16]byte{}) {
		topicID = newUUID()
	}
	if assignment == nil {
		assignment = assignReplicas(live, partitions, rf, 0, -1, -1)
	}
	// Config first, then the assignment, as Kafka does: a broker that sees
	// the topic finds its config.
	if err := n.writeTopicConfig(name, configs, false); err != nil {
		return err
	}
	if _, err := n.zk.create(topicPath(name), encodeAssignment(topicID, assignment), 0); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("%w: %s", ErrTopicExists, name)
		}
		return fmt.Errorf("cluster: create %s: %w", topicPath(name), err)
	}
	n.log.Info("cluster: topic created", "topic", name, "partitions", partitions, "replication_factor", rf, "assignment", assignment)
	return nil
}

// newUUID is a random (version 4) UUID, as Kafka's Uuid.randomUuid.
func newUUID() [16]byte {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// TopicAssignment returns a topic's id and the replicas of each partition
// as /brokers/topics/<name> records them.
func (n *Node) TopicAssignment(name string) ([16]byte, [][]int32, error) {
	data, _, err := n.zk.get(topicPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return [16]byte{}, nil, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	if err != nil {
		return [16]byte{}, nil, fmt.Errorf("cluster: read %s: %w", topicPath(name), err)
	}
	return decodeAssignment(name, data)
}

// DeleteTopic requests the deletion of a topic (/admin/delete_topics/<name>);
// the controller carries it out once all the topic's replicas are live.
// Errors: ErrTopicNotFound.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ok, _, err := n.zk.conn.Exists(n.zk.p(topicPath(name)))
	if err != nil {
		return fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	if _, err := n.zk.createParents(deleteTopicPath(name), nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("cluster: delete topic %s: %w", name, err)
	}
	return nil
}

// TopicConfigs returns a topic's config overrides (/config/topics/<name>).
// Errors: ErrTopicNotFound.
func (n *Node) TopicConfigs(name string) (map[string]string, error) {
	data, _, err := n.zk.get(topicConfigPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		if ok, _, err := n.zk.conn.Exists(n.zk.p(topicPath(name))); err == nil && ok {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", topicConfigPath(name), err)
	}
	return parseTopicConfig(name, data)
}

// SetTopicConfig replaces a topic's config overrides and writes Kafka's
// change notification (/config/changes/config_change_<seq>). Errors:
// ErrTopicNotFound.
func (n *Node) SetTopicConfig(ctx context.Context, name string, configs map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ok, _, err := n.zk.conn.Exists(n.zk.p(topicPath(name)))
	if err != nil {
		return fmt.Errorf("cluster: set config of %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	return n.writeTopicConfig(name, configs, true)
}

func (n *Node) writeTopicConfig(name string, configs map[string]string, notify bool) error {
	if err := n.setEntityConfig(topicConfigPath(name), configs); err != nil {
		return err
	}
	if notify {
		return n.announceConfigChange([]byte(`{"version":2,"entity_path":"topics/` + name + `"}`))
	}
	return nil
}

// AddPartitions raises a topic's partition count to total, assigning the
// new partitions as Kafka does (round robin continuing from the broker of
// partition 0's first replica). The controller brings them online. Errors:
// ErrTopicNotFound, ErrInvalidPartitions (total not above the current
// count), ErrInvalidReplicationFactor (fewer live brokers than replicas).
func (n *Node) AddPartitions(ctx context.Context, name string, total int) error {
	return n.addPartitions(ctx, name, total, nil)
}

// AddPartitionsAssigned is AddPartitions with the new partitions' replicas
// given (kafka-topics.sh --alter --replica-assignment): added[i] is
// partition current+i's, as many replicas as the topic's others, distinct
// and live; otherwise ErrInvalidReplicaAssignment.
func (n *Node) AddPartitionsAssigned(ctx context.Context, name string, total int, added [][]int32) error {
	if added == nil {
		added = [][]int32{}
	}
	return n.addPartitions(ctx, name, total, added)
}

func (n *Node) addPartitions(ctx context.Context, name string, total int, manual [][]int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, stat, err := n.zk.get(topicPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	}
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", topicPath(name), err)
	}
	fa, err := decodeFullAssignment(name, data)
	if err != nil {
		return err
	}
	id, parts := fa.id, fa.parts
	if len(fa.adding) > 0 || len(fa.removing) > 0 {
		// As Kafka's AdminZkClient: not while a partition moves.
		return fmt.Errorf("%w: topic %s", ErrReassignmentInProgress, name)
	}
	if total <= len(parts) {
		return fmt.Errorf("%w: topic %s has %d partitions, asked for %d", ErrInvalidPartitions, name, len(parts), total)
	}
	live, err := n.liveBrokerIDs()
	if err != nil {
		return err
	}
	rf := len(parts[0])
	if rf > len(live) {
		return fmt.Errorf("%w: %d with %d live brokers", ErrInvalidReplicationFactor, rf, len(live))
	}
	var added [][]int32
	if manual != nil {
		if len(manual) != total-len(parts) {
			return fmt.Errorf("%w: %d assignments for %d new partitions", ErrInvalidReplicaAssignment, len(manual), total-len(parts))
		}
		if err := ValidateAssignment(manual, rf, live); err != nil {
			return err
		}
		added = manual
	} else {
		start := slices.Index(live, parts[0][0])
		added = assignReplicas(live, total-len(parts), rf, len(parts), start, start)
	}
	if _, err := n.zk.set(topicPath(name), encodeAssignment(id, append(parts, added...)), stat.Version); err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("cluster: add partitions to %s: changed concurrently: %w", name, ErrVersionConflict)
		}
		return fmt.Errorf("cluster: write %s: %w", topicPath(name), err)
	}
	return nil
}

// ValidateAssignment checks a manual replica assignment as Kafka's
// AdminZkClient does: every partition has rf replicas, no broker twice,
// every broker live.
func ValidateAssignment(assignment [][]int32, rf int, live []int32) error {
	for p, reps := range assignment {
		if len(reps) == 0 || len(reps) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas; every partition needs the same, non-zero number (%d)", ErrInvalidReplicaAssignment, p, len(reps), rf)
		}
		for i, r := range reps {
			if slices.Contains(reps[:i], r) {
				return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, p, r)
			}
			if !slices.Contains(live, r) {
				return fmt.Errorf("%w: partition %d names broker %d, which is not live (live brokers %v)", ErrInvalidReplicaAssignment, p, r, live)
			}
		}
	}
	return nil
}
