package server

import (
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/group"
)

// API keys served. Each has its own file, NN_name.go.
const (
	apiKeyProduce                 int16 = 0
	apiKeyFetch                   int16 = 1
	apiKeyListOffsets             int16 = 2
	apiKeyMetadata                int16 = 3
	apiKeyLeaderAndIsr            int16 = 4 // cluster mode only (clusterAPIs)
	apiKeyStopReplica             int16 = 5 // cluster mode only
	apiKeyUpdateMetadata          int16 = 6 // cluster mode only
	apiKeyControlledShutdown      int16 = 7 // cluster mode only
	apiKeySASLHandshake           int16 = 17
	apiKeyApiVersions             int16 = 18
	apiKeyDescribeAcls            int16 = 29
	apiKeyCreateAcls              int16 = 30
	apiKeyDeleteAcls              int16 = 31
	apiKeyCreateTopics            int16 = 19
	apiKeyDeleteTopics            int16 = 20
	apiKeyDeleteRecords           int16 = 21
	apiKeyInitProducerID          int16 = 22
	apiKeyOffsetForLeaderEpoch    int16 = 23
	apiKeyWriteTxnMarkers         int16 = 27 // inter-broker; on a single node, Admin.abortTransaction
	apiKeyDescribeConfigs         int16 = 32
	apiKeyAlterReplicaLogDirs     int16 = 34
	apiKeyDescribeLogDirs         int16 = 35
	apiKeyAlterConfigs            int16 = 33
	apiKeyCreatePartitions        int16 = 37
	apiKeyElectLeaders            int16 = 43
	apiKeyIncrementalAlterConfigs int16 = 44
	apiKeyAlterPartitionReassign  int16 = 45 // cluster mode only
	apiKeyListPartitionReassign   int16 = 46 // cluster mode only
	apiKeySASLAuthenticate        int16 = 36
	apiKeyDescribeClientQuotas    int16 = 48
	apiKeyAlterClientQuotas       int16 = 49
	apiKeyDescribeUserScram       int16 = 50
	apiKeyAlterUserScram          int16 = 51
	apiKeyDescribeCluster         int16 = 60
	apiKeyDescribeProducers       int16 = 61

	// The transaction coordinator's (package txn; FindCoordinator key
	// type 1 is routed in 10_find_coordinator.go).
	apiKeyFindCoordinator      int16 = 10
	apiKeyAddPartitionsToTxn   int16 = 24
	apiKeyAddOffsetsToTxn      int16 = 25
	apiKeyEndTxn               int16 = 26
	apiKeyDescribeTransactions int16 = 65
	apiKeyListTransactions     int16 = 66
)

// handlerFunc runs one decoded request. It returns the response to write
// (nil: none, as for acks=0 produce) or an error that closes the connection.
// Per-topic and per-partition failures are error codes inside the response,
// never a returned error.
type handlerFunc func(s *Server, rc *reqCtx, req kmsg.Request) (*response, error)

// api is one served API: the version range advertised in ApiVersions (which
// is exactly what decodeRequest accepts) and its handler.
type api struct {
	min, max int16
	handle   handlerFunc
}

// apiTable is a dispatch table: the APIs served, by key. Read-only once
// built.
type apiTable map[int16]api

// apis is a single node's dispatch table; clusterAPIs is a cluster
// member's, which adds the inter-broker APIs (LeaderAndIsr, StopReplica,
// UpdateMetadata, ControlledShutdown) and partition reassignment
// (AlterPartitionReassignments, ListPartitionReassignments). The version ranges are what Kafka
// 3.x serves, capped at what kmsg decodes, Produce from v3 and Fetch from
// v4 (record format v2 only), OffsetCommit and OffsetFetch from v1 (README,
// "Old request versions"). Filled in init to break the initialization
// cycle through ApiVersions, whose handler reads these tables.
var apis, clusterAPIs apiTable

// apisFor returns the dispatch table of a cluster member or a single node;
// without consumerProtocol (group.coordinator.rebalance.protocols lacks
// `consumer`), one without the KIP-848 consumer group APIs; without
// shareGroups (group.share.enable), one without the share group APIs.
func apisFor(cluster, consumerProtocol bool, shareGroups ...bool) apiTable {
	t := apis
	if cluster {
		t = clusterAPIs
	}
	if !consumerProtocol {
		t = maps.Clone(t)
		delete(t, apiKeyConsumerGroupHeartbeat)
		delete(t, apiKeyConsumerGroupDescribe)
	}
	if len(shareGroups) == 0 || !shareGroups[0] {
		t = maps.Clone(t)
		for k := range group.ShareAPIs() {
			delete(t, k)
		}
	}
	return t
}

func init() {
	apis = apiTable{
		apiKeyProduce:                 {3, 11, handleProduce},
		apiKeyFetch:                   {4, 16, handleFetch},
		apiKeyListOffsets:             {0, 9, handleListOffsets},
		apiKeyMetadata:                {0, 12, handleMetadata},
		apiKeySASLHandshake:           {0, 1, handleSASLHandshake},
		apiKeyApiVersions:             {0, 4, handleApiVersions},
		apiKeyDescribeAcls:            {0, 3, handleDescribeAcls},
		apiKeyCreateAcls:              {0, 3, handleCreateAcls},
		apiKeyDeleteAcls:              {0, 3, handleDeleteAcls},
		apiKeyCreateTopics:            {0, 7, handleCreateTopics},
		apiKeyDeleteTopics:            {0, 6, handleDeleteTopics},
		apiKeyDeleteRecords:           {0, 2, handleDeleteRecords},
		apiKeyInitProducerID:          {0, 4, handleInitProducerID},
		apiKeyOffsetForLeaderEpoch:    {0, 4, handleOffsetForLeaderEpoch},
		apiKeyWriteTxnMarkers:         {0, 1, handleWriteTxnMarkers},
		apiKeyDescribeConfigs:         {0, 4, handleDescribeConfigs},
		apiKeyAlterReplicaLogDirs:     {0, 2, handleAlterReplicaLogDirs},
		apiKeyDescribeLogDirs:         {0, 4, handleDescribeLogDirs},
		apiKeyAlterConfigs:            {0, 2, handleAlterConfigs},
		apiKeyCreatePartitions:        {0, 3, handleCreatePartitions},
		apiKeyElectLeaders:            {0, 2, handleElectLeaders},
		apiKeyIncrementalAlterConfigs: {0, 1, handleIncrementalAlterConfigs},
		apiKeySASLAuthenticate:        {0, 2, handleSASLAuthenticate},
		apiKeyDescribeClientQuotas:    {0, 1, handleDescribeClientQuotas},
		apiKeyAlterClientQuotas:       {0, 1, handleAlterClientQuotas},
		apiKeyDescribeUserScram:       {0, 0, handleDescribeUserScramCredentials},
		apiKeyAlterUserScram:          {0, 0, handleAlterUserScramCredentials},
		apiKeyDescribeCluster:         {0, 1, handleDescribeCluster},
		apiKeyDescribeProducers:       {0, 0, handleDescribeProducers},
	}
	// The group coordinator's APIs (FindCoordinator, JoinGroup, SyncGroup,
	// Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
	// DescribeGroups, DeleteGroups, OffsetDelete) all go to package group.
	for key, r := range group.APIs() {
		apis[key] = api{r[0], r[1], handleGroup}
	}
	// FindCoordinator keeps the group coordinator's versions; the server
	// answers transactional keys itself.
	fc := apis[apiKeyFindCoordinator]
	fc.handle = handleFindCoordinator
	apis[apiKeyFindCoordinator] = fc
	apis[apiKeyAddPartitionsToTxn] = api{0, 3, handleAddPartitionsToTxn}
	apis[apiKeyAddOffsetsToTxn] = api{0, 4, handleAddOffsetsToTxn}
	apis[apiKeyEndTxn] = api{0, 4, handleEndTxn}
	apis[apiKeyDescribeTransactions] = api{0, 0, handleDescribeTransactions}
	apis[apiKeyListTransactions] = api{0, 1, handleListTransactions}
	// KIP-848 consumer groups: the coordinator's, with the server's
	// authorization around them; left out by apisFor when
	// group.coordinator.rebalance.protocols lacks `consumer`.
	apis[apiKeyConsumerGroupHeartbeat] = api{0, 1, handleConsumerGroupHeartbeat}
	apis[apiKeyConsumerGroupDescribe] = api{0, 1, handleConsumerGroupDescribe}
	// KIP-932 share groups: the coordinator's, with the server's
	// authorization around them; left out by apisFor unless
	// group.share.enable is set.
	apis[apiKeyShareGroupHeartbeat] = api{1, 1, handleShareGroupHeartbeat}
	apis[apiKeyShareGroupDescribe] = api{1, 1, handleShareGroupDescribe}
	clusterAPIs = maps.Clone(apis)
	clusterAPIs[apiKeyLeaderAndIsr] = api{2, 5, handleLeaderAndIsr}
	clusterAPIs[apiKeyStopReplica] = api{3, 3, handleStopReplica}
	clusterAPIs[apiKeyUpdateMetadata] = api{5, 7, handleUpdateMetadata}
	clusterAPIs[apiKeyControlledShutdown] = api{1, 3, handleControlledShutdown}
	clusterAPIs[apiKeyAlterPartitionReassign] = api{0, 0, handleAlterPartitionReassignments}
	clusterAPIs[apiKeyListPartitionReassign] = api{0, 0, handleListPartitionReassignments}
	for key, a := range clusterAPIs {
		if max := kmsg.RequestForKey(key).MaxVersion(); a.max > max {
			panic("server: api table above kmsg's max version for " + kmsg.NameForKey(key))
		}
	}
}

// kresp wraps a kmsg response for the writer.
func kresp(r kmsg.Response) *response { return &response{kresp: r} }
