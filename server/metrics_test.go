package server_test

import (
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice/sluice/config"
	"github.com/sluice/sluice/engine"
	_ "github.com/sluice/sluice/engine/memlog"
	"github.com/sluice/sluice/metastore"
	"github.com/sluice/sluice/metrics"
	"github.com/sluice/sluice/metrics/metricstest"
	"github.com/sluice/sluice/record"
	_ "github.com/sluice/sluice/segment"
	"github.com/sluice/sluice/server"
)

// metricsServer is a server with metrics on, listening on 127.0.0.1, and
// an HTTP server of its registry as /metrics would serve it.
type metricsServer struct {
	srv     *server.Server
	m       *metrics.Metrics
	addr    string
	metrics string // URL of the scrape endpoint
}

func startMetricsServer(t *testing.T, backend string, mod func(*config.Config)) *metricsServer {
	t.Helper()
	dir := t.TempDir()
	meta, err := metastore.Open(filepath.Join(dir, "meta"), metastore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	store, err := engine.Open(backend, engine.Options{Dir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.GroupInitialRebalanceDelay = 0
	if mod != nil {
		mod(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	s, err := server.New(server.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), Meta: meta, Store: store,
		ClusterID: "metrics", AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(ln.Addr().(*net.TCPAddr).Port), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, "PLAINTEXT")
	// The options that matter for what a scrape sees are production's
	// (console/server.go): ContinueOnError serves the good series even
	// when gathering fails, so a test must look for what went missing.
	hs := httptest.NewServer(promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		store.Close()
		meta.Close()
	})
	return &metricsServer{srv: s, m: m, addr: ln.Addr().String(), metrics: hs.URL + "/metrics"}
}

// scrape fetches url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := metricstest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the series of family name whose labels
// include want, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	return metricstest.Value(fams, name, want)
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := value(fams, name, want)
	if !ok {
		t.Fatalf("no series %s%v", name, want)
	}
	return v
}

// batchBytes sums the size of every record batch a client wrote, as the
// broker must count it in bytesin.
type batchBytes struct{ n, records atomic.Int64 }

func (b *batchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	// franz-go counts the records' bytes without the batch header.
	b.n.Add(int64(m.CompressedBytes) + record.HeaderSize)
	b.records.Add(int64(m.NumRecords))
}

// TestMetricsAfterWorkload runs a known workload with real clients and
// checks the scraped counters and gauges against it: messages and bytes
// in, request counts per API, the log end offset, partition counts, the
// consumer lag of a group that committed short of the end, connections.
func TestMetricsAfterWorkload(t *testing.T) {
	ms := startMetricsServer(t, "segment", nil)
	const topic, n, behind = "metered", 50, 10
	var written batchBytes
	cl := newClient(t, ms.addr, kgo.WithHooks(&written), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, topic, 1, nil)
	ctx := testCtx(t, 30*time.Second)
	for i := 0; i < n; i++ {
		// One batch per record, of growing sizes: bytesin must be the
		// sum of the batch sizes, headers included.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: make([]byte, 10+i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The client's hook may run just after ProduceSync returns.
	for deadline := time.Now().Add(10 * time.Second); written.records.Load() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("client wrote %d records, want %d", written.records.Load(), n)
		}
	}

	cons := newClient(t, ms.addr, kgo.ConsumerGroup("metered-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got += fs.NumRecords()
	}
	commit := map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: n - behind}}}
	var commitErr error
	cons.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						commitErr = fmt.Errorf("commit %s-%d: error code %d", rt.Topic, rp.Partition, rp.ErrorCode)
					}
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}

	// A request is counted once its response is sent, which may be just
	// after the client has read it: wait for the last ones.
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fams = scrape(t, ms.metrics)
		// A Fetch is counted under Fetch, then FetchConsumer: wait for
		// both too.
		if v, _ := value(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "OffsetCommit"}); v >= 1 && sumRequests(fams, "FetchConsumer") >= 1 || time.Now().After(deadline) {
			break
		}
	}
	byTopic := map[string]string{"topic": topic}
	all := map[string]string{"topic": ""}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_server_brokertopicmetrics_messagesin_total", byTopic, n},
		{"kafka_server_brokertopicmetrics_messagesin_total", all, n},
		{"kafka_server_brokertopicmetrics_bytesin_total", byTopic, float64(written.n.Load())},
		{"kafka_server_brokertopicmetrics_totalproducerequests_total", byTopic, n},
		{"kafka_server_brokertopicmetrics_failedproducerequests_total", byTopic, 0},
		{"kafka_server_brokertopicmetrics_failedfetchrequests_total", byTopic, 0},
		{"kafka_log_log_logendoffset", map[string]string{"topic": topic, "partition": "0"}, n},
		{"kafka_log_log_logstartoffset", map[string]string{"topic": topic, "partition": "0"}, 0},
		{"kafka_log_log_numlogsegments", map[string]string{"topic": topic, "partition": "0"}, 1},
		{"kafka_log_log_size", map[string]string{"topic": topic, "partition": "0"}, float64(written.n.Load())},
		{"kafka_consumergroup_current_offset", map[string]string{"consumergroup": "metered-group", "topic": topic, "partition": "0"}, n - behind},
		{"kafka_consumergroup_lag", map[string]string{"consumergroup": "metered-group", "topic": topic, "partition": "0"}, behind},
		{"kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "metered-group", "topic": topic}, behind},
		{"kafka_consumergroup_members", map[string]string{"consumergroup": "metered-group"}, 1},
		{"kafka_server_replicamanager_underreplicatedpartitions", nil, 0},
		{"kafka_controller_kafkacontroller_activecontrollercount", nil, 1},
		{"kafka_controller_kafkacontroller_offlinepartitionscount", nil, 0},
		{"sluice_metrics_partition_series_suppressed", nil, 0},
		// The kgo consumer keeps one incremental fetch session (KIP-227).
		{"kafka_server_fetchsessioncache_numincrementalfetchsessions", nil, 1},
		{"kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", nil, 1},
		{"kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total", nil, 0},
		{"kafka_server_replicamanager_isrshrinks_total", nil, 0},
		{"kafka_network_requestmetrics_errors_total", map[string]string{"request": "Produce", "error": "NONE"}, n},
	} {
		if got := mustValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The bytes a consumer read: at least the records (the group's
	// consumer read every batch once; fetches may overlap on retries).
	if out := mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesout_total", byTopic); out < float64(written.n.Load()) {
		t.Errorf("bytesout %v < bytes produced %d", out, written.n.Load())
	}
	for _, api := range []string{"Fetch", "SyncGroup"} {
		if f := mustValue(t, fams, "kafka_network_requestmetrics_errors_total", map[string]string{"request": api, "error": "NONE"}); f < 1 {
			t.Errorf("errors_total{%s,NONE} = %v, want >= 1", api, f)
		}
	}
	if f := mustValue(t, fams, "kafka_server_brokertopicmetrics_totalfetchrequests_total", byTopic); f < 1 {
		t.Errorf("totalfetchrequests = %v, want >= 1", f)
	}
	// The topic and the offsets topic: partitions and leaders match, one
	// broker leads all of them.
	parts := mustValue(t, fams, "kafka_server_replicamanager_partitioncount", nil)
	if leaders := mustValue(t, fams, "kafka_server_replicamanager_leadercount", nil); parts < 1 || leaders != parts {
		t.Errorf("partitioncount %v, leadercount %v: want equal and >= 1", parts, leaders)
	}
	if gp := mustValue(t, fams, "kafka_controller_kafkacontroller_globalpartitioncount", nil); gp != parts {
		t.Errorf("globalpartitioncount %v, partitioncount %v", gp, parts)
	}

	// Requests per API: every version seen summed.
	sumRequests := func(api string) float64 { return sumRequests(fams, api) }
	for api, min := range map[string]float64{"Produce": n, "Fetch": 1, "Metadata": 1, "ApiVersions": 2, "CreateTopics": 1,
		"JoinGroup": 1, "SyncGroup": 1, "OffsetCommit": 1, "FindCoordinator": 1} {
		if got := sumRequests(api); got < min {
			t.Errorf("requests_total{request=%q} = %v, want >= %v", api, got, min)
		}
	}
	// A consumer's Fetch counts under Fetch and FetchConsumer, as in Kafka
	// (a scrape may fall between the two).
	if fc, f := sumRequests("FetchConsumer"), sumRequests("Fetch"); fc < 1 || fc > f {
		t.Errorf("requests_total{request=FetchConsumer} = %v with Fetch %v, want 1..Fetch", fc, f)
	}
	if c := mustValue(t, fams, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "FetchConsumer"}); c < 1 {
		t.Errorf("totaltimems{request=FetchConsumer} count = %v, want >= 1", c)
	}
	if got := sumRequests("FetchFollower"); got != 0 {
		t.Errorf("requests_total{request=FetchFollower} = %v on a single node, want 0", got)
	}
	// Latency histograms: one observation per answered produce in each
	// phase.
	for _, phase := range []string{"totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems", "responsesendtimems"} {
		if c := mustValue(t, fams, "kafka_network_requestmetrics_"+phase, map[string]string{"request": "Produce"}); c < n {
			t.Errorf("%s{request=Produce} count = %v, want >= %d", phase, c, n)
		}
	}
	if c := mustValue(t, fams, "kafka_server_socket_server_metrics_connection_count", map[string]string{"listener": "PLAINTEXT"}); c < 1 {
		t.Errorf("connection_count = %v, want > 0", c)
	}
	if c := mustValue(t, fams, "kafka_server_socket_server_metrics_successful_authentication_total", map[string]string{"listener": "PLAINTEXT"}); c < 1 {
		t.Errorf("successful_authentication_total = %v, want > 0", c)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	if _, ok := fams["process_cpu_seconds_total"]; !ok {
		t.Error("no process metrics")
	}

	tot := ms.m.Totals()
	if tot.MessagesIn != n || tot.BytesIn != written.n.Load() || tot.ProduceRequests != n || tot.FetchRequests < 1 || tot.BytesOut < written.n.Load() {
		t.Errorf("Totals() = %+v, want %d messages and %d bytes in", tot, n, written.n.Load())
	}
}

// TestMetricsPartitionSeriesBound: with more local partitions than
// metrics.partition.series.max, the per-partition series are left out and
// the suppression gauge says so; the per-topic lag sum stays.
func TestMetricsPartitionSeriesBound(t *testing.T) {
	ms := startMetricsServer(t, "memory", func(c *config.Config) { c.MetricsPartitionSeriesMax = 2 })
	cl := newClient(t, ms.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "wide", 3, nil)
	ctx := testCtx(t, 20*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "wide", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "wide", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "bounded", offs); err != nil {
		t.Fatal(err)
	}
	// A group id that is not UTF-8 must not fail the scrape.
	if _, err := adm.CommitOffsets(ctx, "bad\xffgroup", offs); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, ms.metrics)
	if _, ok := value(fams, "kafka_consumergroup_members", map[string]string{"consumergroup": `bad\xffgroup`}); !ok {
		t.Error("no series for the group whose id is not UTF-8")
	}
	if v := mustValue(t, fams, "sluice_metrics_partition_series_suppressed", nil); v != 1 {
		t.Errorf("sluice_metrics_partition_series_suppressed = %v, want 1", v)
	}
	for _, name := range []string{"kafka_log_log_size", "kafka_log_log_logendoffset", "kafka_log_log_logstartoffset"} {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			t.Errorf("%s has %d series; want none above the bound", name, len(f.Metric))
		}
	}
	// Lag series count group x partition against the same bound: 2 so
	// far, within it.
	for _, name := range []string{"kafka_consumergroup_lag", "kafka_consumergroup_current_offset"} {
		if f := fams[name]; f == nil || len(f.Metric) != 2 {
			t.Errorf("%s: want 2 series (2 groups x 1 partition, bound 2), have %v", name, f)
		}
	}
	if v := mustValue(t, fams, "sluice_metrics_consumergroup_lag_series_suppressed", nil); v != 0 {
		t.Errorf("sluice_metrics_consumergroup_lag_series_suppressed = %v, want 0", v)
	}
	// A third group's offset makes 3 group-partition series: above the bound.
	if _, err := adm.CommitOffsets(ctx, "third", offs); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, ms.metrics)
	for _, name := range []string{"kafka_consumergroup_lag", "kafka_consumergroup_current_offset"} {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			t.Errorf("%s has %d series; want none above the bound", name, len(f.Metric))
		}
	}
	if v := mustValue(t, fams, "sluice_metrics_consumergroup_lag_series_suppressed", nil); v != 1 {
		t.Errorf("sluice_metrics_consumergroup_lag_series_suppressed = %v, want 1", v)
	}
	if v := mustValue(t, fams, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "bounded", "topic": "wide"}); v != 1 {
		t.Errorf("lag_sum = %v, want 1", v)
	}
	if v := mustValue(t, fams, "sluice_metrics_consumergroup_groups_suppressed", nil); v != 0 {
		t.Errorf("sluice_metrics_consumergroup_groups_suppressed = %v, want 0", v)
	}
	if v := mustValue(t, fams, "kafka_server_replicamanager_partitioncount", nil); v < 3 {
		t.Errorf("partitioncount = %v, want >= 3", v)
	}
}

// TestMetricsTransactions: a committed and an aborted transaction of a
// kgo transactional producer are counted by result, and the id is then
// Complete* in the state gauge.
func TestMetricsTransactions(t *testing.T) {
	ms := startMetricsServer(t, "memory", nil)
	adm := kadm.NewClient(newClient(t, ms.addr))
	createTopic(t, adm, "txm", 1, nil)
	cl := newClient(t, ms.addr, kgo.TransactionalID("txm-producer"), kgo.DefaultProduceTopic("txm"))
	ctx := testCtx(t, 30*time.Second)
	for _, commit := range []bool{true, false} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// The complete state is written after EndTxn is answered.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fams := scrape(t, ms.metrics)
		c, _ := value(fams, "sluice_transaction_coordinator_completed_total", map[string]string{"result": "commit"})
		a, _ := value(fams, "sluice_transaction_coordinator_completed_total", map[string]string{"result": "abort"})
		done, _ := value(fams, "sluice_transaction_coordinator_transactions", map[string]string{"state": "CompleteAbort"})
		if c == 1 && a == 1 && done == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("completed commit=%v abort=%v, CompleteAbort ids=%v; want 1, 1, 1", c, a, done)
		}
	}
}

// TestMetricsGroupLabelsInjective: two group ids that differ only in bytes
// that are not UTF-8 keep a series each (mapping both to U+FFFD made them
// one duplicate series, which fails the gather and drops one group).
func TestMetricsGroupLabelsInjective(t *testing.T) {
	ms := startMetricsServer(t, "memory", nil)
	cl := newClient(t, ms.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "t", 1, nil)
	ctx := testCtx(t, 20*time.Second)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1})
	for _, g := range []string{"g\xff", "g\xfe"} {
		if _, err := adm.CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ms.m.Registry().Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
	fams := scrape(t, ms.metrics)
	for _, g := range []string{`g\xff`, `g\xfe`} {
		if _, ok := value(fams, "kafka_consumergroup_members", map[string]string{"consumergroup": g}); !ok {
			t.Errorf("no kafka_consumergroup_members series for group %s", g)
		}
	}
}

// TestMetricsPartitionSeriesMaxZero: metrics.partition.series.max=0 means
// the per-partition series are never exported (it meant unbounded).
func TestMetricsPartitionSeriesMaxZero(t *testing.T) {
	ms := startMetricsServer(t, "memory", func(c *config.Config) { c.MetricsPartitionSeriesMax = 0 })
	cl := newClient(t, ms.addr)
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "wide", 3, nil)
	ctx := testCtx(t, 20*time.Second)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "wide", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, ms.metrics)
	for _, name := range []string{"kafka_log_log_size", "kafka_log_log_logendoffset", "kafka_consumergroup_lag", "kafka_consumergroup_current_offset"} {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			t.Errorf("metrics.partition.series.max=0: %s has %d series", name, len(f.Metric))
		}
	}
	for _, name := range []string{"sluice_metrics_partition_series_suppressed", "sluice_metrics_consumergroup_lag_series_suppressed"} {
		if v := mustValue(t, fams, name, nil); v != 1 {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	if _, ok := value(fams, "kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "g", "topic": "wide"}); !ok {
		t.Error("no lag_sum for g: the per-topic sum stays")
	}
}

// sumRequests is requests_total of api over all its versions.
func sumRequests(fams map[string]*dto.MetricFamily, api string) float64 {
	var sum float64
	for _, m := range fams["kafka_network_requestmetrics_requests_total"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "request" && l.GetValue() == api {
				sum += m.Counter.GetValue()
			}
		}
	}
	return sum
}
