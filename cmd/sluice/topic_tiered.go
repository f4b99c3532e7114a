package main

// The tiered-storage part of `sluice topic describe` (KIP-405): for a topic
// with remote.storage.enable=true, each partition's local and remote log
// start offsets, the end of what is remote, the tiering lag, and its local
// and remote sizes. All through the Kafka protocol: ListOffsets -2
// (earliest, the remote log start), -4 (earliest-local, v8) and -5
// (latest-tiered, v9, KIP-1005) and -1 (latest) to the leaders;
// DescribeLogDirs for the local sizes (each leader's replica, as
// kafka-log-dirs.sh reports them); and the read-only DescribeConfigs entry
// sluice.remote.partition.size.bytes for the remote sizes (a Sluice
// broker's; another broker's topic shows "-"), and
// sluice.remote.partition.copy.lag asked of each partition's leader for
// the copy lag in bytes and segments (Kafka's RemoteCopyLagBytes and
// RemoteCopyLagSegments: rolled segments below the high watermark not yet
// remote, as of the leader's last task run; "-" before it ran).

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteSizesConfig is the broker's read-only status entry of a tiered
// topic's remote sizes ("partition:bytes,...").
const remoteSizesConfig = "sluice.remote.partition.size.bytes"

// copyLagConfig is the status entry a leader answers with the copy lag of
// the partitions it leads ("partition:bytes:segments,...").
const copyLagConfig = "sluice.remote.partition.copy.lag"

// tieredPartition is what describe shows of one partition of a tiered
// topic; -1 where unknown.
type tieredPartition struct {
	localStart, remoteStart, tieredEnd, end int64
	localBytes, remoteBytes                 int64
	lagBytes, lagSegments                   int64 // copy lag
}

// lag is how many offsets are not remote yet: from the end of what is
// remote (or the log start when nothing is) to the log end.
func (p tieredPartition) lag() int64 {
	from := p.tieredEnd + 1
	if p.tieredEnd < 0 {
		from = p.remoteStart
	}
	if p.end < 0 || from < 0 {
		return -1
	}
	return max(p.end-from, 0)
}

// tieredStatus gathers the tiering of td's partitions. Failures leave -1.
func tieredStatus(ctx context.Context, cl *kgo.Client, adm *kadm.Client, td kadm.TopicDetail) map[int32]*tieredPartition {
	out := map[int32]*tieredPartition{}
	for p := range td.Partitions {
		out[p] = &tieredPartition{-1, -1, -1, -1, -1, -1, -1, -1}
	}
	for _, q := range []struct {
		ts  int64
		set func(*tieredPartition, int64)
	}{
		{-2, func(p *tieredPartition, o int64) { p.remoteStart = o }},
		{-4, func(p *tieredPartition, o int64) { p.localStart = o }},
		{-5, func(p *tieredPartition, o int64) { p.tieredEnd = o }},
		{-1, func(p *tieredPartition, o int64) { p.end = o }},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = td.Topic
		for p := range td.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, q.ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		for _, sr := range cl.RequestSharded(ctx, req) { // kgo sends each partition to its leader
			resp, ok := sr.Resp.(*kmsg.ListOffsetsResponse)
			if sr.Err != nil || !ok {
				continue
			}
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					if p := out[rp.Partition]; p != nil && rp.ErrorCode == 0 && t.Topic == td.Topic {
						q.set(p, rp.Offset)
					}
				}
			}
		}
	}
	set := kadm.TopicsSet{}
	for p := range td.Partitions {
		set.Add(td.Topic, p)
	}
	// A broker that is down fails its part: the others' answers count.
	if dirs, _ := adm.DescribeAllLogDirs(ctx, set); dirs != nil {
		dirs.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(lp kadm.DescribedLogDirPartition) {
				pd, ok := td.Partitions[lp.Partition]
				if p := out[lp.Partition]; ok && p != nil && lp.Topic == td.Topic && d.Broker == pd.Leader && !lp.IsFuture {
					p.localBytes = lp.Size
				}
			})
		})
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, td.Topic, []string{remoteSizesConfig}
	req.Resources = append(req.Resources, r)
	if resp, err := req.RequestWith(ctx, cl); err == nil {
		for _, rr := range resp.Resources {
			for _, c := range rr.Configs {
				if c.Name != remoteSizesConfig || c.Value == nil || rr.ErrorCode != 0 {
					continue
				}
				for _, kv := range strings.Split(*c.Value, ",") {
					ps, bs, _ := strings.Cut(kv, ":")
					pi, err1 := strconv.ParseInt(ps, 10, 32)
					n, err2 := strconv.ParseInt(bs, 10, 64)
					if p := out[int32(pi)]; err1 == nil && err2 == nil && p != nil {
						p.remoteBytes = n
					}
				}
			}
		}
	}
	copyLags(ctx, cl, td, out)
	return out
}

// copyLags asks each leader of td's partitions for the copy lag of those
// it leads. A leader that fails leaves -1.
func copyLags(ctx context.Context, cl *kgo.Client, td kadm.TopicDetail, out map[int32]*tieredPartition) {
	leaders := map[int32]bool{}
	for _, pd := range td.Partitions {
		if pd.Leader >= 0 {
			leaders[pd.Leader] = true
		}
	}
	for leader := range leaders {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, td.Topic, []string{copyLagConfig}
		req.Resources = append(req.Resources, r)
		kr, err := cl.Broker(int(leader)).Request(ctx, req)
		resp, ok := kr.(*kmsg.DescribeConfigsResponse)
		if err != nil || !ok {
			continue
		}
		for _, rr := range resp.Resources {
			for _, c := range rr.Configs {
				if c.Name != copyLagConfig || c.Value == nil || rr.ErrorCode != 0 || *c.Value == "" {
					continue
				}
				for _, e := range strings.Split(*c.Value, ",") {
					f := strings.Split(e, ":")
					if len(f) != 3 {
						continue
					}
					pi, err1 := strconv.ParseInt(f[0], 10, 32)
					b, err2 := strconv.ParseInt(f[1], 10, 64)
					n, err3 := strconv.ParseInt(f[2], 10, 64)
					// Only the leader's own: an old leader's last figure is stale.
					if p := out[int32(pi)]; err1 == nil && err2 == nil && err3 == nil && p != nil && td.Partitions[int32(pi)].Leader == leader {
						p.lagBytes, p.lagSegments = b, n
					}
				}
			}
		}
	}
}

// printTiered writes the tiering lines of a topic under its partition
// table.
func printTiered(w io.Writer, parts map[int32]*tieredPartition) {
	var local, remote int64
	for _, p := range parts {
		local += max(p.localBytes, 0)
		remote += max(p.remoteBytes, 0)
	}
	fmt.Fprintf(w, "  Tiered: LocalSize: %s  RemoteSize: %s\n", byteSize(local), byteSize(remote))
	t := newTable(w, "  PARTITION", "LOCAL-START", "REMOTE-START", "TIERED-END", "LOG-END", "TIERING-LAG", "COPY-LAG-BYTES", "COPY-LAG-SEGMENTS", "LOCAL-SIZE", "REMOTE-SIZE")
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	size := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return byteSize(n)
	}
	for i := int32(0); i < int32(len(parts)); i++ {
		p := parts[i]
		if p == nil {
			continue
		}
		t.row("  "+strconv.Itoa(int(i)), num(p.localStart), num(p.remoteStart), num(p.tieredEnd), num(p.end), num(p.lag()), size(p.lagBytes), num(p.lagSegments), size(p.localBytes), size(p.remoteBytes))
	}
	t.flush()
}

// byteSize prints n bytes in B, KiB, MiB or GiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
