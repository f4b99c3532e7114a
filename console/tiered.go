package console

import (
	"context"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteSizesConfig is a Sluice broker's read-only DescribeConfigs entry
// of a tiered topic's remote sizes, "partition:bytes" joined by commas
// (server/tiered_status.go), as `sluice topic describe` reads it.
const remoteSizesConfig = "sluice.remote.partition.size.bytes"

// tieredSplit fills the local/remote split of a tiered topic's partitions:
// the local log start of each (ListOffsets -4, earliest-local, to the
// leaders) and its bytes in the remote tier. What cannot be read stays as
// it was (the local start then the log start, the remote size 0).
func tieredSplit(ctx context.Context, cl *kgo.Client, topic string, parts []partitionJSON) {
	byPart := map[int32]*partitionJSON{}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for i := range parts {
		p := &parts[i]
		p.LocalStartOffset = p.StartOffset
		byPart[p.Partition] = p
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.Partition, -4, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for _, sr := range cl.RequestSharded(ctx, req) {
		resp, ok := sr.Resp.(*kmsg.ListOffsetsResponse)
		if sr.Err != nil || !ok {
			continue
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if p := byPart[rp.Partition]; p != nil && t.Topic == topic && rp.ErrorCode == 0 && rp.Offset >= 0 {
					p.LocalStartOffset = rp.Offset
				}
			}
		}
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{remoteSizesConfig}
	dreq.Resources = append(dreq.Resources, r)
	kr, err := cl.Request(ctx, dreq)
	if err != nil {
		return
	}
	for _, rr := range kr.(*kmsg.DescribeConfigsResponse).Resources {
		for _, c := range rr.Configs {
			if rr.ErrorCode != 0 || c.Name != remoteSizesConfig || c.Value == nil {
				continue
			}
			for _, kv := range strings.Split(*c.Value, ",") {
				ps, bs, _ := strings.Cut(kv, ":")
				pi, err1 := strconv.ParseInt(ps, 10, 32)
				n, err2 := strconv.ParseInt(bs, 10, 64)
				if p := byPart[int32(pi)]; err1 == nil && err2 == nil && p != nil {
					p.RemoteSize = n
				}
			}
		}
	}
}
