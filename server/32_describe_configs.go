package server

// DescribeConfigs (key 32), served v0-v4.
//
//	v0: per resource, every config or the named ones; is_default
//	v1: include_synonyms; each config's source and synonyms
//	v2: no changes
//	v3: include_documentation; config type and documentation
//	v4: flexible
//
// Topics (resource type 2) describe every supported topic config (see
// configs.go) with its effective value: the topic override (source
// DYNAMIC_TOPIC_CONFIG), else the broker's setting of its synonym
// (STATIC_BROKER_CONFIG when it differs from Kafka's default, DEFAULT_CONFIG
// when not). The broker (type 4, name = broker.id or empty) describes a
// small read-only set of its static configs. Other resource types are
// INVALID_REQUEST. A topic's overrides come from the control plane: in
// cluster mode from ZooKeeper, so any broker describes any topic.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/acl"
	"github.com/sluice/sluice/config"
)

const (
	resourceTopic  = kmsg.ConfigResourceType(2)
	resourceBroker = kmsg.ConfigResourceType(4)
)

func handleDescribeConfigs(s *Server, rc *reqCtx, req kmsg.Request) (*response, error) {
	r := req.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range r.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := s.az.configAuthz(rc, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case err != nil:
		case rr.ResourceType == resourceTopic:
			err = s.describeTopicConfigs(r, rr, &sr)
		case rr.ResourceType == resourceBroker:
			err = s.describeBrokerConfigs(r, rr, &sr)
		default:
			err = errInvalidRequest
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
			sr.Configs = nil
			if sr.ErrorCode == kerr.UnknownServerError.Code {
				s.log.Error("server: describe configs", "resource", rr.ResourceName, "err", err)
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kresp(resp), nil
}

func (s *Server) describeTopicConfigs(r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	overrides, err := s.admin.topicConfigs(rr.ResourceName)
	if err != nil {
		return err
	}
	for _, d := range topicConfigDefs {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, d.name) {
			continue
		}
		v, src := s.configValue(overrides, d.name)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = d.name, &v
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == sourceDefault
		c.ConfigType = kmsg.ConfigType(d.typ)
		if r.IncludeDocumentation {
			doc := d.doc
			c.Documentation = &doc
		}
		if r.IncludeSynonyms {
			if src == sourceDynamicTopic {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.name, v, sourceDynamicTopic))
			}
			bv := d.def(&s.cfg)
			def := config.Default()
			if dv := d.def(&def); dv != bv {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.synonym, bv, sourceStaticBroker))
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.synonym, d.def(&def), sourceDefault))
		}
		sr.Configs = append(sr.Configs, c)
	}
	s.describeCleanerStatus(rr, sr)
	return nil
}

// Read-only status entries of a compacted topic's cleaning on this broker,
// returned only when asked for by name (so that a tool listing every
// config sees only Kafka's): the highest dirty ratio among the local
// partitions (Kafka's cleanableRatio, which min.cleanable.dirty.ratio is
// compared with) and when one was last cleaned (ms since the epoch, -1:
// not since this broker started). `sluice topic describe` shows them.
const (
	cleanerDirtyRatioConfig  = "sluice.cleaner.dirty.ratio"
	cleanerLastCleanedConfig = "sluice.cleaner.last.cleaned.ms"
)

func (s *Server) describeCleanerStatus(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	if rr.ConfigNames == nil || (!slices.Contains(rr.ConfigNames, cleanerDirtyRatioConfig) && !slices.Contains(rr.ConfigNames, cleanerLastCleanedConfig)) {
		return
	}
	t := s.rm.Topic(rr.ResourceName)
	if t == nil || !t.Config.Log.Compact {
		return
	}
	ratio, last := s.rm.CleanerSummary(t)
	add := func(name, v string, typ int8) {
		if !slices.Contains(rr.ConfigNames, name) {
			return
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = name, &v, true
		c.Source = kmsg.ConfigSource(sourceDefault)
		c.ConfigType = kmsg.ConfigType(typ)
		sr.Configs = append(sr.Configs, c)
	}
	add(cleanerDirtyRatioConfig, strconv.FormatFloat(ratio, 'f', 4, 64), configTypeDouble)
	add(cleanerLastCleanedConfig, strconv.FormatInt(last, 10), configTypeLong)
}

func synonym(name, value string, src int8) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Value, sy.Source = name, &value, kmsg.ConfigSource(src)
	return sy
}

// brokerConfig is one described broker config.
type brokerConfig struct {
	name string
	typ  int8
	get  func(c *config.Config) string
}

var brokerConfigs = []brokerConfig{
	{"advertised.listeners", configTypeList, func(c *config.Config) string { return strings.Join(c.AdvertisedListeners, ",") }},
	{"auto.create.topics.enable", 1, func(c *config.Config) string { return strconv.FormatBool(c.AutoCreateTopics) }},
	{"broker.id", configTypeInt, func(c *config.Config) string { return strconv.Itoa(int(c.BrokerID)) }},
	{"default.replication.factor", configTypeInt, func(c *config.Config) string { return strconv.Itoa(int(c.DefaultReplicationFactor)) }},
	{"delete.topic.enable", 1, func(c *config.Config) string { return strconv.FormatBool(c.DeleteTopicEnable) }},
	{"listeners", configTypeList, func(c *config.Config) string { return strings.Join(c.Listeners, ",") }},
	{"log.cleaner.backoff.ms", configTypeLong, func(c *config.Config) string { return ms(c.LogCleanerBackoff) }},
	{"log.cleaner.dedupe.buffer.size", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerDedupeBufferSize, 10) }},
	{"log.cleaner.delete.retention.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerDeleteRetentionMs, 10) }},
	{"log.cleaner.enable", 1, func(c *config.Config) string { return strconv.FormatBool(c.LogCleanerEnable) }},
	{"log.cleaner.io.max.bytes.per.second", configTypeDouble, func(c *config.Config) string { return javaDouble(c.LogCleanerIOMaxBytesPerSecond) }},
	{"log.cleaner.max.compaction.lag.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerMaxCompactionLagMs, 10) }},
	{"log.cleaner.min.cleanable.ratio", configTypeDouble, func(c *config.Config) string { return javaDouble(c.LogCleanerMinCleanableRatio) }},
	{"log.cleaner.min.compaction.lag.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.LogCleanerMinCompactionLagMs, 10) }},
	{"log.cleaner.threads", configTypeInt, func(c *config.Config) string { return strconv.Itoa(c.LogCleanerThreads) }},
	{"log.cleanup.policy", configTypeList, func(c *config.Config) string { return c.LogCleanupPolicy.String() }},
	{"log.dirs", configTypeString, func(c *config.Config) string { return strings.Join(c.LogDirs, ",") }},
	{"log.retention.bytes", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.LogRetentionBytes, 10) }},
	{"log.retention.ms", configTypeLong, func(c *config.Config) string { return ms(c.LogRetention) }},
	{"log.roll.ms", configTypeLong, func(c *config.Config) string { return ms(c.LogSegmentMs) }},
	{"log.segment.bytes", configTypeInt, func(c *config.Config) string { return strconv.FormatInt(c.LogSegmentBytes, 10) }},
	{"log.message.timestamp.after.max.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampAfterMax, 10) }},
	{"log.message.timestamp.before.max.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampBeforeMax, 10) }},
	{"log.message.timestamp.difference.max.ms", configTypeLong, func(c *config.Config) string { return strconv.FormatInt(c.MessageTimestampDifferenceMax, 10) }},
	{"log.message.timestamp.type", configTypeString, func(c *config.Config) string { return c.MessageTimestampType }},
	{"message.max.bytes", configTypeInt, func(c *config.Config) string { return strconv.Itoa(c.MessageMaxBytes) }},
	{"min.insync.replicas", configTypeInt, func(c *config.Config) string { return strconv.Itoa(c.MinInsyncReplicas) }},
	{"num.partitions", configTypeInt, func(c *config.Config) string { return strconv.Itoa(int(c.NumPartitions)) }},
	{"socket.request.max.bytes", configTypeInt, func(c *config.Config) string { return strconv.Itoa(int(c.SocketRequestMaxBytes)) }},
	{"storage.backend", configTypeString, func(c *config.Config) string { return c.StorageBackend }},
}

func (s *Server) describeBrokerConfigs(r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.nodeID)) {
		return errResourceNotFound
	}
	def := config.Default()
	for _, bc := range brokerConfigs {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, bc.name) {
			continue
		}
		v := bc.get(&s.cfg)
		src := sourceStaticBroker
		if bc.get(&def) == v {
			src = sourceDefault
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = bc.name, &v, true
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == sourceDefault
		c.ConfigType = kmsg.ConfigType(bc.typ)
		if r.IncludeSynonyms {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(bc.name, v, src))
		}
		sr.Configs = append(sr.Configs, c)
	}
	return nil
}
