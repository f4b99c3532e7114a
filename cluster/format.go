package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/metadata"
)

// ZooKeeper layout, Kafka's ZooKeeper mode (KAFKA-FACTS.md is the contract;
// Kafka's own tools read these znodes). All paths are below the optional
// chroot of zookeeper.connect. Part of the cluster's persistent format: do
// not change.
//
//	/cluster/id                                persistent clusterIDZNode, created by the first broker
//	/brokers/ids/<id>                          ephemeral  brokerRegistration
//	/controller                                ephemeral  controllerZNode
//	/controller_epoch                          persistent decimal epoch
//	/brokers/topics/<t>                        persistent topicAssignment (version 3)
//	/brokers/topics/<t>/partitions/<p>/state   persistent PartitionState; every write
//	                                                      is guarded by the znode version
//	/config/topics/<t>                         persistent topicConfig
//	/config/changes/config_change_<seq>        persistent sequential {"version":2,"entity_path":"topics/<t>"}
//	/admin/delete_topics/<t>                   persistent deletion request, removed when done
//	/admin/reassign_partitions                 persistent reassignZNode: a reassignment request
//	                                                      (pre-KIP-455 tools), removed when done
//	/isr_change_notification/isr_change_<seq>  persistent sequential isrChangeNotification
//	/kafka-acl..., /kafka-acl-extended/...     ACLs and their change notifications: see acls.go
const (
	clusterIDPath       = "/cluster/id"
	brokersPath         = "/brokers"
	brokerIDsPath       = "/brokers/ids"
	topicsPath          = "/brokers/topics"
	controllerPath      = "/controller"
	controllerEpochPath = "/controller_epoch"
	configTopicsPath    = "/config/topics"
	configChangesPath   = "/config/changes"
	deleteTopicsPath    = "/admin/delete_topics"
	reassignPath        = "/admin/reassign_partitions"
	isrChangePath       = "/isr_change_notification"
	isrChangePrefix     = "isr_change_"
	configChangePrefix  = "config_change_"
)

// clusterIDZNode is /cluster/id.
type clusterIDZNode struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

// parseClusterID returns the id in a /cluster/id znode; an error wraps
// ErrCorruptZnode.
func parseClusterID(data []byte) (string, error) {
	var zn clusterIDZNode
	if err := json.Unmarshal(data, &zn); err != nil || zn.ID == "" {
		return "", fmt.Errorf("%w: %s holds %q, not a cluster id: %v", ErrCorruptZnode, clusterIDPath, data, err)
	}
	return zn.ID, nil
}

// parseControllerEpoch parses /controller_epoch: a decimal epoch, which
// Kafka writes as an int32 >= 0. An error wraps ErrCorruptZnode.
func parseControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil || e < 0 {
		return 0, fmt.Errorf("%w: %s: %q", ErrCorruptZnode, controllerEpochPath, data)
	}
	return int32(e), nil
}

// persistentPaths are created at start when missing, as Kafka's brokers do.
var persistentPaths = []string{brokerIDsPath, topicsPath, configTopicsPath, configChangesPath,
	deleteTopicsPath, isrChangePath}

func brokerPath(id int32) string     { return brokerIDsPath + "/" + strconv.Itoa(int(id)) }
func topicPath(t string) string      { return topicsPath + "/" + t }
func partitionsPath(t string) string { return topicPath(t) + "/partitions" }
func partitionPath(t string, p int32) string {
	return partitionsPath(t) + "/" + strconv.Itoa(int(p))
}
func partitionStatePath(t string, p int32) string { return partitionPath(t, p) + "/state" }
func topicConfigPath(t string) string             { return configTopicsPath + "/" + t }
func deleteTopicPath(t string) string             { return deleteTopicsPath + "/" + t }

// nowMillis is the "timestamp" string Kafka writes: Unix milliseconds.
func nowMillis() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// brokerRegistration is /brokers/ids/<id> (version 5).
type brokerRegistration struct {
	Version                     int               `json:"version"`
	Host                        string            `json:"host"`
	Port                        int32             `json:"port"`
	Endpoints                   []string          `json:"endpoints"`
	ListenerSecurityProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Rack                        *string           `json:"rack"`
	JmxPort                     int               `json:"jmx_port"`
	Timestamp                   string            `json:"timestamp"`
}

func newBrokerRegistration(host string, port int32, rack string) brokerRegistration {
	r := brokerRegistration{
		Version:                     5,
		Host:                        host,
		Port:                        port,
		Endpoints:                   []string{"PLAINTEXT://" + net.JoinHostPort(host, strconv.Itoa(int(port)))},
		ListenerSecurityProtocolMap: map[string]string{"PLAINTEXT": "PLAINTEXT"},
		JmxPort:                     -1,
		Timestamp:                   nowMillis(),
	}
	if rack != "" {
		r.Rack = &rack
	}
	return r
}

// Endpoint is one named listener of a broker.
type Endpoint struct {
	Listener string // the listener name, e.g. "PLAINTEXT", "CONTROLLER"
	Host     string
	Port     int32
	Protocol string // its security protocol ("": PLAINTEXT)
}

// Broker is a live broker as the cluster knows it.
type Broker = metadata.Broker

// decodeBroker decodes the registration of broker id, created at czxid.
// A registration without a usable address (a host, or an endpoint, with a
// port in 0-65535) is an error wrapping ErrCorruptZnode.
func decodeBroker(id int32, data []byte, czxid int64) (Broker, error) {
	var r brokerRegistration
	if err := json.Unmarshal(data, &r); err != nil {
		return Broker{}, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, brokerPath(id), err)
	}
	b := Broker{ID: id, Host: r.Host, Port: r.Port, Epoch: czxid}
	if r.Rack != nil {
		b.Rack = *r.Rack
	}
	for _, ep := range r.Endpoints {
		name, hp, ok := strings.Cut(ep, "://")
		if _, _, err := net.SplitHostPort(hp); ok && err == nil {
			if b.Endpoints == nil {
				b.Endpoints = map[string]string{}
			}
			b.Endpoints[strings.ToUpper(name)] = hp
		}
	}
	// A registration without host (Kafka with only non-default listeners)
	// names its address in endpoints.
	if b.Host == "" && len(r.Endpoints) > 0 {
		ep := r.Endpoints[0]
		if i := strings.Index(ep, "://"); i >= 0 {
			ep = ep[i+3:]
		}
		h, p, err := net.SplitHostPort(ep)
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: endpoint %q: %v", ErrCorruptZnode, brokerPath(id), r.Endpoints[0], err)
		}
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: endpoint %q: port %q", ErrCorruptZnode, brokerPath(id), r.Endpoints[0], p)
		}
		b.Host, b.Port = h, int32(n)
	}
	if b.Host == "" || b.Port < 0 || b.Port > 65535 {
		return Broker{}, fmt.Errorf("%w: %s: no address (host %q, port %d)", ErrCorruptZnode, brokerPath(id), b.Host, b.Port)
	}
	return b, nil
}

// controllerZNode is /controller.
type controllerZNode struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

// topicAssignment is /brokers/topics/<t> (version 3).
type topicAssignment struct {
	Version          int                `json:"version"`
	TopicID          string             `json:"topic_id,omitempty"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
}

func encodeAssignment(id [16]byte, parts [][]int32) []byte {
	return encodeFullAssignment(fullAssignment{id: id, parts: parts})
}

// fullAssignment is a topic znode with its reassignment state (KIP-455):
// while partition p is being reassigned, parts[p] is RS = TRS + ORS (the
// target replicas, then the original ones not among them), adding[p] is
// AR = RS - ORS and removing[p] is RR = ORS - TRS; the target is
// parts[p] - removing[p]. A partition not being reassigned has neither.
type fullAssignment struct {
	id               [16]byte
	parts            [][]int32
	adding, removing map[int32][]int32
}

func encodeFullAssignment(fa fullAssignment) []byte {
	a := topicAssignment{
		Version:          3,
		TopicID:          base64.RawURLEncoding.EncodeToString(fa.id[:]),
		Partitions:       make(map[string][]int32, len(fa.parts)),
		AddingReplicas:   map[string][]int32{},
		RemovingReplicas: map[string][]int32{},
	}
	for p, rs := range fa.parts {
		a.Partitions[strconv.Itoa(p)] = rs
	}
	for p, rs := range fa.adding {
		if len(rs) > 0 {
			a.AddingReplicas[strconv.Itoa(int(p))] = rs
		}
	}
	for p, rs := range fa.removing {
		if len(rs) > 0 {
			a.RemovingReplicas[strconv.Itoa(int(p))] = rs
		}
	}
	b, _ := json.Marshal(a)
	return b
}

// decodeFullAssignment is decodeAssignment with adding_replicas and
// removing_replicas: their keys must name existing partitions and their
// replicas be among that partition's; an error wraps ErrCorruptZnode.
func decodeFullAssignment(topic string, data []byte) (fullAssignment, error) {
	id, parts, err := decodeAssignment(topic, data)
	if err != nil {
		return fullAssignment{}, err
	}
	var a topicAssignment
	_ = json.Unmarshal(data, &a) // decoded once already
	fa := fullAssignment{id: id, parts: parts, adding: map[int32][]int32{}, removing: map[int32][]int32{}}
	for _, side := range []struct {
		name string
		in   map[string][]int32
		out  map[int32][]int32
	}{{"adding_replicas", a.AddingReplicas, fa.adding}, {"removing_replicas", a.RemovingReplicas, fa.removing}} {
		for k, rs := range side.in {
			p, err := strconv.Atoi(k)
			if err != nil || p < 0 || p >= len(parts) || strconv.Itoa(p) != k {
				return fullAssignment{}, fmt.Errorf("%w: %s: %s names partition %q of %d", ErrCorruptZnode, topicPath(topic), side.name, k, len(parts))
			}
			for _, r := range rs {
				if !slices.Contains(parts[p], r) {
					return fullAssignment{}, fmt.Errorf("%w: %s: %s of partition %d names broker %d, not a replica (%v)", ErrCorruptZnode, topicPath(topic), side.name, p, r, parts[p])
				}
			}
			if len(rs) > 0 {
				side.out[int32(p)] = rs
			}
		}
	}
	return fa, nil
}

// decodeAssignment returns the topic id (zero when the znode predates
// topic ids) and the replicas of partitions 0..n-1: the keys of
// "partitions" must be exactly "0" to "<n-1>", each with at least one
// replica. An error wraps ErrCorruptZnode.
func decodeAssignment(topic string, data []byte) ([16]byte, [][]int32, error) {
	var id [16]byte
	var a topicAssignment
	if err := json.Unmarshal(data, &a); err != nil {
		return id, nil, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, topicPath(topic), err)
	}
	if a.TopicID != "" {
		// Kafka's Uuid.toString is URL-safe base64 without padding.
		b, err := base64.RawURLEncoding.DecodeString(a.TopicID)
		if err != nil || len(b) != 16 {
			if b2, err2 := base64.StdEncoding.DecodeString(a.TopicID); err2 == nil && len(b2) == 16 {
				b, err = b2, nil
			} else {
				return id, nil, fmt.Errorf("%w: %s: topic_id %q", ErrCorruptZnode, topicPath(topic), a.TopicID)
			}
		}
		copy(id[:], b)
	}
	parts := make([][]int32, len(a.Partitions))
	for k, rs := range a.Partitions {
		// Only the canonical decimal: "01" or "+1" would also parse
		// as 1, and leave another partition without replicas.
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || p >= len(parts) || strconv.Itoa(p) != k {
			return id, nil, fmt.Errorf("%w: %s: partition %q of %d", ErrCorruptZnode, topicPath(topic), k, len(parts))
		}
		if len(rs) == 0 {
			return id, nil, fmt.Errorf("%w: %s: partition %d has no replicas", ErrCorruptZnode, topicPath(topic), p)
		}
		parts[p] = rs
	}
	return id, parts, nil
}

// PartitionState is /brokers/topics/<t>/partitions/<p>/state: who leads a
// partition and which replicas are in sync. ControllerEpoch is the epoch of
// the controller (or, for an ISR change, of the LeaderAndIsr request the
// leader acts on) that wrote it.
type PartitionState struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"` // -1: no leader (offline)
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
}

type partitionStateZNode struct {
	Version int `json:"version"`
	PartitionState
}

func encodePartitionState(s PartitionState) []byte {
	if s.ISR == nil {
		s.ISR = []int32{}
	}
	b, _ := json.Marshal(partitionStateZNode{Version: 1, PartitionState: s})
	return b
}

func decodePartitionState(path string, data []byte) (PartitionState, error) {
	var z partitionStateZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return PartitionState{}, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, path, err)
	}
	return z.PartitionState, nil
}

// topicConfig is /config/topics/<t>.
type topicConfig struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

// parseTopicConfig returns the overrides in /config/topics/<topic> (empty,
// never nil, when it has none). An error wraps ErrCorruptZnode.
func parseTopicConfig(topic string, data []byte) (map[string]string, error) {
	var tc topicConfig
	if err := json.Unmarshal(data, &tc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, topicConfigPath(topic), err)
	}
	if tc.Config == nil {
		tc.Config = map[string]string{}
	}
	return tc.Config, nil
}

func encodeTopicConfig(c map[string]string) []byte {
	if c == nil {
		c = map[string]string{}
	}
	b, _ := json.Marshal(topicConfig{Version: 1, Config: c})
	return b
}

// isrChangeNotification is /isr_change_notification/isr_change_<seq>.
type isrChangeNotification struct {
	Version    int              `json:"version"`
	Partitions []TopicPartition `json:"partitions"`
}

// parseIsrChange returns the partitions an ISR change notification at
// path names. An error wraps ErrCorruptZnode.
func parseIsrChange(path string, data []byte) ([]TopicPartition, error) {
	var note isrChangeNotification
	if err := json.Unmarshal(data, &note); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, path, err)
	}
	return note.Partitions, nil
}

// reassignZNode is /admin/reassign_partitions, the reassignment request of
// Kafka's tools before KIP-455 (kafka-reassign-partitions.sh --zookeeper):
// {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}.
// log_dirs, when present, is kept but not acted on.
type reassignZNode struct {
	Version    int             `json:"version"`
	Partitions []reassignEntry `json:"partitions"`
}

type reassignEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// parseReassignZNode returns the target replicas of each partition named
// in /admin/reassign_partitions, in the order given. A znode that is not
// that JSON, names a partition twice or a topic that is not a valid name,
// is an error wrapping ErrCorruptZnode. Replica lists are not checked here
// (the controller validates them as it does the API's).
func parseReassignZNode(data []byte) ([]TopicPartition, map[TopicPartition][]int32, error) {
	var z reassignZNode
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrCorruptZnode, reassignPath, err)
	}
	order := make([]TopicPartition, 0, len(z.Partitions))
	out := make(map[TopicPartition][]int32, len(z.Partitions))
	for _, e := range z.Partitions {
		tp := TopicPartition{Topic: e.Topic, Partition: e.Partition}
		if e.Topic == "" || e.Partition < 0 {
			return nil, nil, fmt.Errorf("%w: %s: entry %q partition %d", ErrCorruptZnode, reassignPath, e.Topic, e.Partition)
		}
		if _, dup := out[tp]; dup {
			return nil, nil, fmt.Errorf("%w: %s: %s listed twice", ErrCorruptZnode, reassignPath, tp)
		}
		if e.Replicas == nil {
			e.Replicas = []int32{}
		}
		out[tp] = e.Replicas
		order = append(order, tp)
	}
	return order, out, nil
}

// encodeReassignZNode is parseReassignZNode's inverse, entries in the
// order of tps.
func encodeReassignZNode(tps []TopicPartition, targets map[TopicPartition][]int32) []byte {
	z := reassignZNode{Version: 1, Partitions: []reassignEntry{}}
	for _, tp := range tps {
		z.Partitions = append(z.Partitions, reassignEntry{Topic: tp.Topic, Partition: tp.Partition, Replicas: targets[tp]})
	}
	b, _ := json.Marshal(z)
	return b
}

// TopicPartition names a partition.
type TopicPartition = metadata.TopicPartition

func sortTPs(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// parseConnect splits zookeeper.connect, "host:port,host:port/chroot", into
// servers and chroot ("" or "/a/b").
func parseConnect(s string) ([]string, string, error) {
	s = strings.TrimSpace(s)
	chroot := ""
	if i := strings.Index(s, "/"); i >= 0 {
		s, chroot = s[:i], strings.TrimRight(s[i:], "/")
	}
	var servers []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "2181")
		}
		servers = append(servers, h)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("cluster: zookeeper.connect %q names no server", s)
	}
	return servers, chroot, nil
}
