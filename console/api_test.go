package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/broker/brokertest"
)

// api is a client of one broker's HTTP side.
type api struct {
	t          *testing.T
	base       string
	user, pass string
	client     *http.Client
}

func newAPI(t *testing.T, b *broker.Broker) *api {
	t.Helper()
	if b.HTTPAddr() == "" {
		t.Fatal("broker has no HTTP address")
	}
	return &api{t: t, base: "http://" + b.HTTPAddr(), client: &http.Client{Timeout: 30 * time.Second}}
}

func (a *api) as(user, pass string) *api {
	c := *a
	c.user, c.pass = user, pass
	return &c
}

// do sends a request and returns the status and body.
func (a *api) do(method, path, contentType string, body io.Reader) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if a.user != "" {
		req.SetBasicAuth(a.user, a.pass)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// get GETs path, wants status want and decodes the body into out (if not nil).
func (a *api) get(path string, want int, out any) []byte {
	a.t.Helper()
	code, body := a.do("GET", path, "", nil)
	if code != want {
		a.t.Fatalf("GET %s: %d %s, want %d", path, code, body, want)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			a.t.Fatalf("GET %s: decode %s: %v", path, body, err)
		}
	}
	return body
}

func (a *api) post(path string, in any, want int, out any) []byte {
	a.t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		a.t.Fatal(err)
	}
	code, body := a.do("POST", path, "application/json", bytes.NewReader(data))
	if code != want {
		a.t.Fatalf("POST %s: %d %s, want %d", path, code, body, want)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			a.t.Fatalf("POST %s: decode %s: %v", path, body, err)
		}
	}
	return body
}

func kclient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, addr, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(kclient(t, addr))
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

type topicList struct {
	Topics []struct {
		Name              string `json:"name"`
		Internal          bool   `json:"internal"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replicationFactor"`
		Size              int64  `json:"size"`
		Messages          int64  `json:"messages"`
	} `json:"topics"`
}

type topicDetail struct {
	Name       string `json:"name"`
	Partitions []struct {
		Partition   int32   `json:"partition"`
		Leader      int32   `json:"leader"`
		Replicas    []int32 `json:"replicas"`
		ISR         []int32 `json:"isr"`
		StartOffset int64   `json:"startOffset"`
		EndOffset   int64   `json:"endOffset"`
		Size        int64   `json:"size"`
	} `json:"partitions"`
	Configs []struct {
		Name   string  `json:"name"`
		Value  *string `json:"value"`
		Source string  `json:"source"`
	} `json:"configs"`
}

type records struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Records   []struct {
		Offset    int64  `json:"offset"`
		Timestamp int64  `json:"timestamp"`
		Key       []byte `json:"key"`
		Value     []byte `json:"value"`
		Headers   []struct {
			Key   string `json:"key"`
			Value []byte `json:"value"`
		} `json:"headers"`
	} `json:"records"`
	NextOffset  int64 `json:"nextOffset"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

func TestHealthz(t *testing.T) {
	b := brokertest.Start(t, "memory")
	a := newAPI(t, b)
	var h map[string]string
	a.get("/healthz", 200, &h)
	if h["status"] != "ok" {
		t.Fatalf("healthz: %v", h)
	}
	var rd struct {
		Ready  bool                       `json:"ready"`
		Checks map[string]json.RawMessage `json:"checks"`
	}
	a.get("/readyz", 200, &rd)
	if !rd.Ready || len(rd.Checks) == 0 {
		t.Fatalf("readyz: %+v", rd)
	}
	body := a.get("/metrics", 200, nil)
	if !strings.Contains(string(body), "# TYPE") && len(body) != 0 {
		t.Fatalf("metrics: %.200s", body)
	}
	code, page := a.do("GET", "/", "", nil)
	if code != 200 || !strings.Contains(strings.ToLower(string(page)), "<html") {
		t.Fatalf("GET /: %d %.200s", code, page)
	}
}

func TestTopicsAndRecords(t *testing.T) {
	b := brokertest.Start(t, "segment")
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "orders", 3)

	// Produce with a key, a JSON value and headers, at known timestamps.
	cl := kclient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Topic: "orders", Partition: 1, Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, `{"n":%d}`, i), Timestamp: base.Add(time.Duration(i) * time.Second),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "nil"}}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var tl topicList
	a.get("/api/topics", 200, &tl)
	if len(tl.Topics) != 1 || tl.Topics[0].Name != "orders" || tl.Topics[0].Partitions != 3 || tl.Topics[0].Messages != 10 || tl.Topics[0].ReplicationFactor != 1 {
		t.Fatalf("topics: %+v", tl)
	}
	var td topicDetail
	a.get("/api/topics/orders", 200, &td)
	if len(td.Partitions) != 3 || td.Partitions[1].EndOffset != 10 || td.Partitions[1].Leader != 0 {
		t.Fatalf("topic: %+v", td)
	}
	if td.Partitions[1].Size <= 0 || tl.Topics[0].Size != td.Partitions[1].Size {
		t.Fatalf("sizes: list %d, partition 1 %d", tl.Topics[0].Size, td.Partitions[1].Size)
	}
	if len(td.Configs) == 0 {
		t.Fatalf("topic has no configs: %+v", td)
	}

	var rs records
	a.get("/api/topics/orders/records?partition=1&offset=3&limit=4", 200, &rs)
	if len(rs.Records) != 4 || rs.Records[0].Offset != 3 || rs.NextOffset != 7 || rs.EndOffset != 10 {
		t.Fatalf("records by offset: %+v", rs)
	}
	r0 := rs.Records[0]
	if string(r0.Key) != "k3" || string(r0.Value) != `{"n":3}` || r0.Timestamp != base.Add(3*time.Second).UnixMilli() ||
		len(r0.Headers) != 2 || r0.Headers[0].Key != "h" || string(r0.Headers[0].Value) != "x" || r0.Headers[1].Value != nil {
		t.Fatalf("record 3: %+v", r0)
	}
	a.get("/api/topics/orders/records?partition=1&offset=-2", 200, &rs)
	if len(rs.Records) != 2 || rs.Records[0].Offset != 8 {
		t.Fatalf("last 2: %+v", rs)
	}
	a.get(fmt.Sprintf("/api/topics/orders/records?partition=1&timestamp=%d&limit=1", base.Add(5*time.Second).UnixMilli()), 200, &rs)
	if len(rs.Records) != 1 || rs.Records[0].Offset != 5 {
		t.Fatalf("by timestamp: %+v", rs)
	}
	a.get("/api/topics/orders/records?partition=0", 200, &rs)
	if len(rs.Records) != 0 || rs.EndOffset != 0 {
		t.Fatalf("empty partition: %+v", rs)
	}

	// Produce through the API and read it back.
	var pr struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}
	a.post("/api/topics/orders/records", map[string]any{"partition": 2, "key": "pk", "value": "pv", "headers": []map[string]any{{"key": "a", "value": "b"}}}, 201, &pr)
	if pr.Partition != 2 || pr.Offset != 0 {
		t.Fatalf("produce: %+v", pr)
	}
	a.post("/api/topics/orders/records", map[string]any{"key": "pk", "value": nil}, 201, &pr)
	a.get("/api/topics/orders/records?partition=2&offset=0", 200, &rs)
	if len(rs.Records) < 1 || string(rs.Records[0].Key) != "pk" || string(rs.Records[0].Value) != "pv" || string(rs.Records[0].Headers[0].Value) != "b" {
		t.Fatalf("read back: %+v", rs)
	}

	// Create a topic.
	var created topicDetail
	a.post("/api/topics", map[string]any{"name": "made", "partitions": 2, "replicationFactor": 1, "configs": map[string]string{"cleanup.policy": "compact"}}, 201, &created)
	if created.Name != "made" || len(created.Partitions) != 2 {
		t.Fatalf("created: %+v", created)
	}
	compact := false
	for _, c := range created.Configs {
		if c.Name == "cleanup.policy" && c.Value != nil && *c.Value == "compact" {
			compact = true
		}
	}
	if !compact {
		t.Fatalf("created topic configs: %+v", created.Configs)
	}
	a.post("/api/topics", map[string]any{"name": "made"}, 409, nil)
}

// A read is bounded by 500 records and by 1 MiB of record bytes (but
// returns at least one record), and pages on with nextOffset.
func TestRecordBounds(t *testing.T) {
	b := brokertest.Start(t, "segment")
	a := newAPI(t, b)
	createTopic(t, b.Addr(), "many", 1)
	createTopic(t, b.Addr(), "large", 1)
	ctx := context.Background()
	cl := kclient(t, b.Addr(), kgo.ProducerBatchMaxBytes(4<<20))
	var recs []*kgo.Record
	for i := range 600 {
		recs = append(recs, &kgo.Record{Topic: "many", Value: fmt.Appendf(nil, "%d", i)})
	}
	big := make([]byte, 300<<10)
	for range 5 {
		recs = append(recs, &kgo.Record{Topic: "large", Value: big})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var rs records
	a.get("/api/topics/many/records?limit=1000", 200, &rs)
	if len(rs.Records) != 500 || rs.NextOffset != 500 || rs.Records[499].Offset != 499 {
		t.Fatalf("limit 1000: %d records, next %d", len(rs.Records), rs.NextOffset)
	}
	a.get(fmt.Sprintf("/api/topics/many/records?offset=%d&limit=500", rs.NextOffset), 200, &rs)
	if len(rs.Records) != 100 || rs.NextOffset != 600 {
		t.Fatalf("second page: %d records, next %d", len(rs.Records), rs.NextOffset)
	}
	a.get("/api/topics/large/records", 200, &rs)
	if len(rs.Records) != 3 || rs.NextOffset != 3 {
		t.Fatalf("1 MiB bound: %d records, next %d", len(rs.Records), rs.NextOffset)
	}
	a.get("/api/topics/large/records?offset=-1", 200, &rs)
	if len(rs.Records) != 1 || rs.Records[0].Offset != 4 || len(rs.Records[0].Value) != len(big) {
		t.Fatalf("last record: %d records", len(rs.Records))
	}
}
