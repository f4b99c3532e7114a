package metrics

import (
	"testing"
	"time"
	"unicode/utf8"
)

// TestNilRecordsNothing: a broker without metrics passes nil everywhere.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Topic("t").Produced(1, 2)
	m.AllTopics().Fetched(3)
	m.Request(0).Done(9, &Timing{})
	m.Listener("PLAINTEXT").Opened()
	m.ISRChanged(true)
	m.RemoveTopic("t")
	if m.Registry() != nil || m.Totals() != (Totals{}) {
		t.Fatal("nil Metrics has state")
	}
	if err := m.Register(nil); err != nil {
		t.Fatal(err)
	}
}

// TestCountingAllocatesNothing: the hot-path calls allocate nothing once
// the handles are resolved.
func TestCountingAllocatesNothing(t *testing.T) {
	m := New()
	tp := m.Topic("orders")
	api := m.Request(0)
	lst := m.Listener("PLAINTEXT")
	now := Now()
	ms := Stamp(time.Millisecond)
	timing := Timing{Received: now, Started: now, Handled: now + ms, Dequeued: now + 2*ms, Sent: now + 3*ms}
	n := testing.AllocsPerRun(1000, func() {
		tp.Produced(10, 1000)
		tp.Fetched(1000)
		tp.ReplicationFetched(10)
		tp.ProduceFailed()
		api.Done(9, &timing)
		_ = m.Request(0)
		m.FetchRequest(false).Done(12, &timing)
		m.FetchRequest(true).Done(12, &timing)
		lst.Opened()
		lst.Closed()
	})
	if n != 0 {
		t.Fatalf("%v allocations per count", n)
	}
}

// TestAggregateAndTotals: a topic's counts go to its series and to the
// topic="" aggregate, which Totals reads; a removed topic's series go.
func TestAggregateAndTotals(t *testing.T) {
	m := New()
	m.Topic("a").Produced(3, 300)
	m.Topic("b").Produced(2, 200)
	m.Topic("a").Fetched(100)
	m.Topic("b").ReplicationFetched(50)
	m.AllTopics().ProduceFailed()
	if got, want := m.Totals(), (Totals{MessagesIn: 5, BytesIn: 500, BytesOut: 100, ProduceRequests: 3, FetchRequests: 2}); got != want {
		t.Fatalf("Totals() = %+v, want %+v", got, want)
	}
	if n, err := count(m, "kafka_server_brokertopicmetrics_messagesin_total"); err != nil || n != 3 {
		t.Fatalf("messagesin series = %d (%v), want 3 (a, b and the aggregate)", n, err)
	}
	m.RemoveTopic("b")
	if n, _ := count(m, "kafka_server_brokertopicmetrics_messagesin_total"); n != 2 {
		t.Fatalf("messagesin series after removing b = %d, want 2", n)
	}
	m.Request(0).Done(9, &Timing{})
	if n, _ := count(m, "kafka_network_requestmetrics_requests_total"); n != 1 {
		t.Fatalf("requests_total series = %d, want 1 (Produce v9)", n)
	}
}

// count returns how many series family name has.
func count(m *Metrics, name string) (int, error) {
	fams, err := m.Registry().Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.Metric), nil
		}
	}
	return 0, nil
}

// TestRequestNamesAreKafkas: the request label spells APIs as Kafka does.
func TestRequestNamesAreKafkas(t *testing.T) {
	for key, want := range map[int16]string{0: "Produce", 4: "LeaderAndIsr", 17: "SaslHandshake", 22: "InitProducerId", 29: "DescribeAcls", 36: "SaslAuthenticate", 50: "DescribeUserScramCredentials"} {
		if got := requestName(key); got != want {
			t.Errorf("requestName(%d) = %q, want %q", key, got, want)
		}
	}
}

// TestErrorNames: the error label spells codes as Kafka's Errors enum.
func TestErrorNames(t *testing.T) {
	for code, want := range map[int16]string{0: "NONE", -1: "UNKNOWN_SERVER_ERROR", 3: "UNKNOWN_TOPIC_OR_PARTITION", 58: "SASL_AUTHENTICATION_FAILED"} {
		if got := errorName(code); got != want {
			t.Errorf("errorName(%d) = %q, want %q", code, got, want)
		}
	}
}

// TestLabelValueUTF8: a name that is not UTF-8 (a client's group id) is
// exported escaped instead of failing the scrape, and the escape is
// injective: names differing only in invalid bytes or in backslashes keep
// different label values (the same one would be a duplicate series).
func TestLabelValueUTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ok", "ok"},
		{"héllo", "héllo"},
		{"g\xffx", `g\xffx`},
		{"g\xfe", `g\xfe`},
		{`g\xff`, `g\\xff`},
		{`a\b`, `a\\b`},
		{"\xe2\x82", `\xe2\x82`}, // a truncated rune: each byte alone
	} {
		if got := LabelValue(tc.in); got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	seen := map[string]string{}
	for _, in := range []string{"g\xff", "g\xfe", "g\uFFFD", `g\xff`, `g\\xff`, "g\\\xff", "g"} {
		out := LabelValue(in)
		if !utf8.ValidString(out) {
			t.Errorf("LabelValue(%q) = %q, not UTF-8", in, out)
		}
		if prev, ok := seen[out]; ok {
			t.Errorf("LabelValue(%q) = LabelValue(%q) = %q", in, prev, out)
		}
		seen[out] = in
	}
	if n := testing.AllocsPerRun(100, func() { _ = LabelValue("topic-1") }); n != 0 {
		t.Errorf("LabelValue of a plain name: %v allocs", n)
	}
	m := New()
	m.Topic("bad\xfe").Produced(1, 1)
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatalf("gather with a non-UTF-8 topic: %v", err)
	}
}

// BenchmarkPerRequest is what metrics add to one produce request of one
// partition besides the clock reads: the topic counters, the error count
// and the six phase histograms. Five Now() readings per request come on
// top (BenchmarkNow).
func BenchmarkPerRequest(b *testing.B) {
	m := New()
	tp := m.Topic("orders")
	api := m.Request(0)
	now := Now()
	ms := Stamp(time.Millisecond)
	timing := Timing{Received: now, Started: now, Handled: now + ms, Dequeued: now + 2*ms, Sent: now + 3*ms}
	b.ReportAllocs()
	for b.Loop() {
		tp.Produced(10, 1000)
		api.Error(0)
		api.Done(9, &timing)
	}
}

// BenchmarkNow is one clock reading for a Timing.
func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Now()
	}
}

// TestFetchRequestKinds: a Fetch counted under its kind (Kafka's
// FetchConsumer / FetchFollower) as well as under Fetch; errors only under
// Fetch.
func TestFetchRequestKinds(t *testing.T) {
	m := New()
	now := Now()
	timing := Timing{Received: now, Started: now, Handled: now + 1, Dequeued: now + 2, Sent: now + 3}
	fetch := m.Request(1)
	for _, follower := range []bool{false, false, true} {
		fetch.Done(12, &timing)
		fetch.Error(0)
		m.FetchRequest(follower).Done(12, &timing)
	}
	if consumer := m.FetchRequest(false); consumer != m.FetchRequest(false) || consumer == m.FetchRequest(true) {
		t.Fatal("FetchRequest handles not stable per kind")
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	reqs := map[string]float64{}
	hist := map[string]uint64{}
	errs := map[string]bool{}
	for _, f := range fams {
		for _, mt := range f.Metric {
			var req string
			for _, l := range mt.Label {
				if l.GetName() == "request" {
					req = l.GetValue()
				}
			}
			switch f.GetName() {
			case "kafka_network_requestmetrics_requests_total":
				reqs[req] += mt.Counter.GetValue()
			case "kafka_network_requestmetrics_totaltimems":
				hist[req] += mt.Histogram.GetSampleCount()
			case "kafka_network_requestmetrics_errors_total":
				errs[req] = true
			}
		}
	}
	for req, want := range map[string]float64{"Fetch": 3, "FetchConsumer": 2, "FetchFollower": 1} {
		if reqs[req] != want || hist[req] != uint64(want) {
			t.Errorf("request=%s: %v requests, %d in totaltimems, want %v", req, reqs[req], hist[req], want)
		}
	}
	if errs["FetchConsumer"] || errs["FetchFollower"] || !errs["Fetch"] {
		t.Errorf("errors by request %v, want Fetch only", errs)
	}
}
