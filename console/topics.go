package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
)

type topicSummaryJSON struct {
	Name              string `json:"name"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replicationFactor"`
	UnderReplicated   int    `json:"underReplicated"`
	Size              int64  `json:"size"`
	Messages          int64  `json:"messages"`
}

type partitionJSON struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leaderEpoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline"`
	StartOffset int64   `json:"startOffset"`
	EndOffset   int64   `json:"endOffset"`
	Size        int64   `json:"size"`
	// LocalStartOffset and RemoteSize are set for a tiered topic (see
	// tieredSplit): the first offset on the leader's disk and the bytes in
	// the remote tier.
	LocalStartOffset int64 `json:"localStartOffset"`
	RemoteSize       int64 `json:"remoteSize"`
}

type configJSON struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	ReadOnly  bool    `json:"readOnly"`
	Sensitive bool    `json:"sensitive"`
}

type topicJSON struct {
	Name       string          `json:"name"`
	Internal   bool            `json:"internal"`
	Partitions []partitionJSON `json:"partitions"`
	Configs    []configJSON    `json:"configs"`
	// ConfigsHidden is set when the principal may describe the topic but
	// not its configs (DescribeConfigs): Configs is then empty.
	ConfigsHidden bool `json:"configsHidden,omitempty"`
	// Tiered is set for a topic with remote.storage.enable=true: its
	// partitions' LocalStartOffset and RemoteSize are the local/remote
	// split (Size is the local size).
	Tiered bool `json:"tiered,omitempty"`
}

// topicStats are the offsets and sizes of some topics' partitions.
type topicStats struct {
	start, end kadm.ListedOffsets
	// sizes[topic][partition][broker] is the size of that replica; nil
	// when the cluster does not answer DescribeLogDirs.
	sizes map[string]map[int32]map[int32]int64
}

// stats reads the start and end offsets and the replica sizes of the
// partitions of topics (which must not be empty: kadm reads every topic
// then), as tds lists them; the sizes only if sizes is set.
func stats(ctx context.Context, adm *kadm.Client, tds kadm.TopicDetails, topics []string, sizes bool) (topicStats, error) {
	var st topicStats
	var err error
	if st.start, err = adm.ListStartOffsets(ctx, topics...); err != nil {
		return st, err
	}
	if st.end, err = adm.ListEndOffsets(ctx, topics...); err != nil {
		return st, err
	}
	if !sizes {
		return st, nil
	}
	set := kadm.TopicsSet{}
	for _, t := range topics {
		for p := range tds[t].Partitions {
			set.Add(t, p)
		}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil && len(dirs) == 0 {
		return st, nil // sizes unknown: shown as 0
	}
	st.sizes = map[string]map[int32]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		for t, ps := range d.Topics {
			for p, dp := range ps {
				if st.sizes[t] == nil {
					st.sizes[t] = map[int32]map[int32]int64{}
				}
				if st.sizes[t][p] == nil {
					st.sizes[t][p] = map[int32]int64{}
				}
				st.sizes[t][p][dp.Broker] += dp.Size
			}
		}
	})
	return st, nil
}

// offsets returns a partition's start and end offsets (0 when unknown).
func (st topicStats) offsets(t string, p int32) (start, end int64) {
	if o, ok := st.start.Lookup(t, p); ok && o.Err == nil {
		start = o.Offset
	}
	if o, ok := st.end.Lookup(t, p); ok && o.Err == nil {
		end = o.Offset
	}
	return start, end
}

// size is the size of partition p of t on broker (its leader).
func (st topicStats) size(t string, p, broker int32) int64 {
	return st.sizes[t][p][broker]
}

func (s *Server) listTopics(w http.ResponseWriter, r *http.Request, q *request) {
	_, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	tds, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	names := q.visibleTopics(tds)
	out := struct {
		Topics []topicSummaryJSON `json:"topics"`
	}{Topics: []topicSummaryJSON{}}
	if len(names) == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	st, err := stats(ctx, adm, tds, names, true)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	for _, name := range names {
		td := tds[name]
		ts := topicSummaryJSON{Name: name, Internal: td.IsInternal, Partitions: len(td.Partitions)}
		for _, pd := range td.Partitions.Sorted() {
			if pd.Partition == 0 {
				ts.ReplicationFactor = len(pd.Replicas)
			}
			if len(pd.ISR) < len(pd.Replicas) {
				ts.UnderReplicated++
			}
			start, end := st.offsets(name, pd.Partition)
			ts.Messages += end - start
			ts.Size += st.size(name, pd.Partition, pd.Leader)
		}
		out.Topics = append(out.Topics, ts)
	}
	writeJSON(w, http.StatusOK, out)
}

// topicParam returns the {topic} of the path, answering 400 (and "") for
// a name Kafka would refuse.
func topicParam(w http.ResponseWriter, r *http.Request) string {
	name := r.PathValue("topic")
	if !validTopic(name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a valid topic name", name), kerr.InvalidTopicException.Message)
		return ""
	}
	return name
}

func (s *Server) describeTopic(w http.ResponseWriter, r *http.Request, q *request) {
	name := topicParam(w, r)
	if name == "" {
		return
	}
	if !q.require(w, acl.OpDescribe, acl.ResourceTopic, name, "describe topic", kerr.TopicAuthorizationFailed) {
		return
	}
	cl, adm, ctx, done, ok := q.kafka(w, r)
	if !ok {
		return
	}
	defer done()
	s.writeTopic(ctx, w, q, cl, adm, name, http.StatusOK)
}

// writeTopic answers code with the details of topic name, its configs
// only if q may DescribeConfigs on it (as Kafka's DescribeConfigs asks).
// REQUIRES: q may Describe the topic.
func (s *Server) writeTopic(ctx context.Context, w http.ResponseWriter, q *request, cl *kgo.Client, adm *kadm.Client, name string, code int) {
	tds, err := adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	td, ok := tds[name]
	if !ok {
		writeKafkaError(w, kerr.UnknownTopicOrPartition)
		return
	}
	if td.Err != nil {
		writeKafkaError(w, td.Err)
		return
	}
	st, err := stats(ctx, adm, tds, []string{name}, true)
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	out := topicJSON{Name: name, Internal: td.IsInternal, Partitions: []partitionJSON{}, Configs: []configJSON{}}
	for _, pd := range td.Partitions.Sorted() {
		start, end := st.offsets(name, pd.Partition)
		out.Partitions = append(out.Partitions, partitionJSON{
			Partition: pd.Partition, Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch,
			Replicas: nonNil(pd.Replicas), ISR: nonNil(pd.ISR), Offline: nonNil(pd.OfflineReplicas),
			StartOffset: start, EndOffset: end, Size: st.size(name, pd.Partition, pd.Leader),
		})
	}
	if q.allowed(acl.OpDescribeConfigs, acl.ResourceTopic, name) {
		out.Configs = topicConfigs(ctx, cl, name)
		for _, c := range out.Configs {
			if c.Name == "remote.storage.enable" && c.Value != nil && *c.Value == "true" {
				out.Tiered = true
				tieredSplit(ctx, cl, name, out.Partitions)
			}
		}
	} else {
		out.ConfigsHidden = true
	}
	writeJSON(w, code, out)
}

// topicConfigs reads a topic's configs with DescribeConfigs (kadm drops
// ReadOnly); none when the request fails.
func topicConfigs(ctx context.Context, cl *kgo.Client, name string) []configJSON {
	out := []configJSON{}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return out
	}
	for _, c := range resp.Resources[0].Configs {
		out = append(out, configJSON{Name: c.Name, Value: c.Value, Source: c.Source.String(), ReadOnly: c.ReadOnly, Sensitive: c.IsSensitive})
	}
	slices.SortFunc(out, func(a, b configJSON) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// createTopicJSON is POST /api/topics's body.
type createTopicJSON struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replicationFactor"`
	Configs           map[string]string `json:"configs"`
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request, q *request) {
	var body createTopicJSON
	if !readJSON(w, r, &body) {
		return
	}
	if !validTopic(body.Name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a valid topic name", body.Name), kerr.InvalidTopicException.Message)
		return
	}
	if body.Partitions < 0 || body.ReplicationFactor < 0 {
		writeError(w, http.StatusBadRequest, "partitions and replicationFactor must be positive (or omitted: the broker's defaults)", kerr.InvalidRequest.Message)
		return
	}
	if !q.allowed(acl.OpCreate, acl.ResourceCluster, acl.ClusterName) && !q.allowed(acl.OpCreate, acl.ResourceTopic, body.Name) {
		writeError(w, http.StatusForbidden, "not authorized to create topic "+body.Name, kerr.TopicAuthorizationFailed.Message)
		return
	}
	cl, adm, err := q.clients()
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	partitions, rf := body.Partitions, body.ReplicationFactor
	if partitions == 0 {
		partitions = -1
	}
	if rf == 0 {
		rf = -1
	}
	configs := map[string]*string{}
	for k, v := range body.Configs {
		configs[k] = &v
	}
	ctx, cancel := kafkaCtx(r)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, body.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		writeKafkaError(w, err)
		return
	}
	s.log.Info("console: topic created", "topic", body.Name, "principal", q.principal)
	w.Header().Set("Location", "/api/topics/"+body.Name)
	if !q.allowed(acl.OpDescribe, acl.ResourceTopic, body.Name) {
		// Created, but its details are not the principal's to see (as
		// describeTopic would refuse them): the name only.
		writeJSON(w, http.StatusCreated, map[string]string{"name": body.Name})
		return
	}
	s.writeTopic(ctx, w, q, cl, adm, body.Name, http.StatusCreated)
}
