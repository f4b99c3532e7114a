package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Replication throttles name their replicas in two topic configs,
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas, as Kafka does:
//
//	"*"                      every replica of the topic
//	"0:101,0:102,1:102"      partition:brokerId pairs
//	""                       none
//
// Entries are trimmed and empty ones skipped.

// Topic config names of the replication throttles' replica lists.
const (
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// CheckThrottledReplicas validates a throttled replica list as Kafka's
// ThrottledReplicaListValidator: the literal "*" or partition:brokerId
// pairs of decimal numbers. Sluice also refuses numbers beyond an int32,
// which Kafka's validator lets through and its ConfigHandler then fails
// to parse.
func CheckThrottledReplicas(v string) error {
	_, _, err := parseThrottled(v, -1)
	return err
}

// ThrottledPartitions is Kafka's ConfigHandler.parseThrottledPartitions:
// the partitions of a throttled replica list v whose broker is brokerID,
// or all set for "*". An invalid v names none, with the error.
func ThrottledPartitions(v string, brokerID int32) (partitions []int32, all bool, err error) {
	return parseThrottled(v, brokerID)
}

func parseThrottled(v string, brokerID int32) ([]int32, bool, error) {
	v = strings.TrimSpace(v)
	if v == "*" {
		return nil, true, nil
	}
	var parts []int32
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		ps, bs, ok := strings.Cut(e, ":")
		p, perr := parseID(ps)
		b, berr := parseID(bs)
		if !ok || perr != nil || berr != nil {
			return nil, false, fmt.Errorf("%q: must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", v)
		}
		if b == brokerID {
			parts = append(parts, p)
		}
	}
	return parts, false, nil
}

// parseID parses a decimal partition or broker id: digits only (no sign),
// as Kafka's [0-9]+, at most MaxInt32.
func parseID(s string) (int32, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}
