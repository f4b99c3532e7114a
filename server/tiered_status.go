package server

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
)

// remoteSizesConfig is a read-only status entry of a tiered topic,
// returned only when asked for by name (as the cleaner's, so a tool
// listing every config sees only Kafka's): each partition's bytes in the
// remote tier, "partition:bytes" joined by commas (Kafka's
// RemoteLogSizeBytes per partition). Any broker answers it, from the
// remote log metadata. `sluice topic describe` shows it beside the local
// sizes (DescribeLogDirs) and the offsets of ListOffsets -2, -4 and -5.
const remoteSizesConfig = "sluice.remote.partition.size.bytes"

// copyLagConfig is another such entry: the copy lag of each partition
// this broker leads, as of its last task run, "partition:bytes:segments"
// joined by commas (Kafka's RemoteCopyLagBytes and RemoteCopyLagSegments);
// `sluice topic describe` asks each partition's leader for it.
const copyLagConfig = "sluice.remote.partition.copy.lag"

func (s *Server) describeRemoteStatus(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	if s.tiered == nil || rr.ConfigNames == nil {
		return
	}
	id, ok := s.md.topicID(rr.ResourceName)
	if !ok {
		return
	}
	if slices.Contains(rr.ConfigNames, copyLagConfig) {
		var parts []string
		for i := range s.md.partitions(rr.ResourceName) {
			if b, n, ok := s.tiered.CopyLag(id, rr.ResourceName, int32(i)); ok {
				parts = append(parts, strconv.Itoa(i)+":"+strconv.FormatInt(b, 10)+":"+strconv.FormatInt(n, 10))
			}
		}
		appendStatus(sr, copyLagConfig, strings.Join(parts, ","))
	}
	if !slices.Contains(rr.ConfigNames, remoteSizesConfig) {
		return
	}
	sizes, err := s.tiered.RemoteSizes(id, rr.ResourceName, len(s.md.partitions(rr.ResourceName)))
	if err != nil {
		return // unknown yet: no entry
	}
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = strconv.Itoa(i) + ":" + strconv.FormatInt(n, 10)
	}
	appendStatus(sr, remoteSizesConfig, strings.Join(parts, ","))
}

// appendStatus appends a read-only status entry name=v to sr.
func appendStatus(sr *kmsg.DescribeConfigsResponseResource, name, v string) {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.ReadOnly = name, &v, true
	c.Source = kmsg.ConfigSource(sourceDefault)
	c.ConfigType = kmsg.ConfigType(config.TypeString)
	sr.Configs = append(sr.Configs, c)
}
