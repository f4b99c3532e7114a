package server

// ElectLeaders (key 43), served v0-v2 (kafka-leader-election.sh).
//
//	v0: topics and partitions (null: all), timeout
//	v1: election type (0 preferred, 1 unclean); top-level error code
//	v2: flexible
//
// In cluster mode the controller runs the election (cluster.Node.ElectLeaders)
// and any other broker answers NOT_CONTROLLER, as Kafka's ZooKeeper-mode
// brokers do (clients send it to the controller). Per partition: no error
// (elected), ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION. A single-node
// broker leads every partition and is each one's only replica: every
// election there is not needed.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/metadata"
)

// errElectionTimedOut: the controller did not answer within the request's
// timeout (REQUEST_TIMED_OUT).
var errElectionTimedOut = errors.New("server: leader election timed out")

func handleElectLeaders(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	unclean := r.Version >= 1 && r.ElectionType == 1
	if r.Version >= 1 && r.ElectionType != 0 && r.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return kresp(resp), nil
	}
	if !s.az.allowedCluster(rc, acl.OpAlter) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return kresp(resp), nil
	}
	var tps []metadata.TopicPartition // nil: all
	if r.Topics != nil {
		tps = []metadata.TopicPartition{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, metadata.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	timeout := time.Duration(max(r.TimeoutMillis, 1000)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	results, err := s.admin.electLeaders(ctx, tps, unclean)
	timedOut := ctx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			err = errElectionTimedOut
		}
		if r.Version >= 1 {
			resp.ErrorCode = errorCode(err)
			return kresp(resp), nil
		}
		// v0 has no top-level error: every partition asked for gets it;
		// with all partitions asked for, the controller's view is not at
		// hand, so those this broker knows of get it.
		if tps == nil {
			for _, t := range s.md.topicNames() {
				for _, pi := range s.md.partitions(t) {
					tps = append(tps, metadata.TopicPartition{Topic: t, Partition: pi.Partition})
				}
			}
		}
		results = map[metadata.TopicPartition]error{}
		for _, tp := range tps {
			results[tp] = err
		}
	}
	resp.Topics = topicResults(results,
		func(partition int32, code int16, msg *string) kmsg.ElectLeadersResponseTopicPartition {
			p := kmsg.NewElectLeadersResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = partition, code, msg
			return p
		},
		func(topic string, parts []kmsg.ElectLeadersResponseTopicPartition) kmsg.ElectLeadersResponseTopic {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic, t.Partitions = topic, parts
			return t
		})
	return kresp(resp), nil
}
