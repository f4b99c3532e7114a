package server

// DescribeConfigs (key 32), served v0-v4.
//
//	v0: per resource, every config or the named ones; is_default
//	v1: include_synonyms; each config's source and synonyms
//	v2: no changes
//	v3: include_documentation; config type and documentation
//	v4: flexible
//
// Both resource kinds are described from package config's definition
// table. Topics (resource type 2) describe every topic key
// (config.TopicKeys) with its effective value: the topic override (source
// DYNAMIC_TOPIC_CONFIG), else the broker's value of its synonym (its
// source: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG or DEFAULT_CONFIG); synonyms list the override and
// then the broker key's synonyms, as Kafka does. The broker (type 4, name =
// broker.id) describes every broker key (config.Keys) with its effective
// value and source; read_only unless the key is dynamic (brokerconfig.go);
// synonyms in Kafka's order (config.Synonyms). The empty name describes
// the cluster-wide dynamic default: only the keys it sets. Another name is
// INVALID_REQUEST, as Kafka answers. A sensitive key (a password, a
// private key, a JAAS line) has is_sensitive and a null value, in its
// synonyms too.
// A GROUP (type 32) describes its consumer.* keys (groupconfig.go).
// Documentation (v3+) is the table's. Other resource types are
// INVALID_REQUEST. A topic's overrides come from the control plane: in
// cluster mode from ZooKeeper, so any broker describes any topic.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

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
		case rr.ResourceType == resourceGroup:
			err = s.describeGroupConfigs(r, rr, &sr) // groupconfig.go
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
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, d.Name) {
			continue
		}
		v, src := s.configValue(overrides, d.Name)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = d.Name, &v
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == sourceDefault
		c.ConfigType = kmsg.ConfigType(d.Type)
		if r.IncludeDocumentation {
			doc := d.Doc
			c.Documentation = &doc
		}
		if r.IncludeSynonyms {
			if src == sourceDynamicTopic {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(d.Name, &v, sourceDynamicTopic))
			}
			if bk, ok := d.Synonym(); ok {
				// The broker key's own synonyms, dynamic layers first.
				c.ConfigSynonyms = appendSynonyms(c.ConfigSynonyms, s.currentConfig().Synonyms(bk, true))
			} else {
				dv, dname := config.TopicDefaultOf(d)
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(dname, &dv, sourceDefault))
			}
		}
		sr.Configs = append(sr.Configs, c)
	}
	s.describeCleanerStatus(rr, sr)
	s.describeRemoteStatus(rr, sr) // tiered_status.go
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
	add := func(name, v string, typ config.Type) {
		if !slices.Contains(rr.ConfigNames, name) {
			return
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = name, &v, true
		c.Source = kmsg.ConfigSource(sourceDefault)
		c.ConfigType = kmsg.ConfigType(typ)
		sr.Configs = append(sr.Configs, c)
	}
	add(cleanerDirtyRatioConfig, strconv.FormatFloat(ratio, 'f', 4, 64), config.TypeDouble)
	add(cleanerLastCleanedConfig, strconv.FormatInt(last, 10), config.TypeLong)
}

// synonym is one entry of a config's synonyms; value nil: none or
// sensitive.
func synonym(name string, value *string, src int8) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Value, sy.Source = name, value, kmsg.ConfigSource(src)
	return sy
}

// brokerConfigDefs are the broker keys, sorted by name.
var brokerConfigDefs = config.Keys()

func (s *Server) describeBrokerConfigs(r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	perBroker := rr.ResourceName != ""
	if perBroker {
		id, err := strconv.ParseInt(rr.ResourceName, 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Broker id must be an integer, but it is: %s", errInvalidRequest, rr.ResourceName)
		}
		if int32(id) != s.nodeID {
			return fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s", errInvalidRequest, s.nodeID, rr.ResourceName)
		}
	}
	cur := s.currentConfig()
	def, _ := cur.DynamicLayers()
	for _, k := range brokerConfigDefs {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, k.Name) {
			continue
		}
		if _, set := def[k.Name]; !perBroker && !set {
			continue // the default resource lists only what it sets, as Kafka
		}
		v, src := cur.Describe(k)
		if !perBroker {
			v, src = nil, config.SourceDynamicDefaultBroker
			if !k.Sensitive {
				d := def[k.Name]
				v = &d
			}
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = k.Name, v
		c.ReadOnly = k.Dynamic == config.Static
		c.IsSensitive = k.Sensitive
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == config.SourceDefaultConfig
		c.ConfigType = kmsg.ConfigType(k.Type)
		if r.IncludeDocumentation {
			doc := k.Doc
			c.Documentation = &doc
		}
		if r.IncludeSynonyms {
			c.ConfigSynonyms = appendSynonyms(c.ConfigSynonyms, cur.Synonyms(k, perBroker))
		}
		sr.Configs = append(sr.Configs, c)
	}
	s.describeListenerKeys(rr, perBroker, cur, sr)
	return nil
}

// describeListenerKeys lists the dynamic listener.name.<l>.* keys set
// (connection limits, keystore and truststore locations), which the table
// does not define one by one, typed as their base key:
// for the default resource its layer's, for this broker both layers'
// (this broker's layer first).
func (s *Server) describeListenerKeys(rr kmsg.DescribeConfigsRequestResource, perBroker bool, cur *config.Config, sr *kmsg.DescribeConfigsResponseResource) {
	def, own := cur.DynamicLayers()
	layers := []struct {
		m   map[string]string
		src config.Source
	}{{def, config.SourceDynamicDefaultBroker}}
	if perBroker {
		layers = append([]struct {
			m   map[string]string
			src config.Source
		}{{own, config.SourceDynamicBroker}}, layers...)
	}
	seen := map[string]bool{}
	for _, l := range layers {
		for _, name := range slices.Sorted(maps.Keys(l.m)) {
			if _, ok := config.Lookup(name); ok || seen[name] || (rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, name)) {
				continue
			}
			seen[name] = true
			v := l.m[name]
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source = name, &v, kmsg.ConfigSource(l.src)
			if syn := config.BrokerSynonyms(name); len(syn) == 2 {
				if bk, ok := config.Lookup(syn[1]); ok {
					c.ConfigType = kmsg.ConfigType(bk.Type)
				}
			}
			sr.Configs = append(sr.Configs, c)
		}
	}
}

// appendSynonyms appends config's synonyms in the wire form.
func appendSynonyms(dst []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, syns []config.Synonym) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	for _, sy := range syns {
		dst = append(dst, synonym(sy.Name, sy.Value, int8(sy.Source)))
	}
	return dst
}
