package e2e

// Browser tests of the web console: Debian's chromium, headless,
// driven by chromedp against `sluice serve`'s HTTP listener. Each test
// reads what a user reads (rows, numbers, pretty-printed values) through the
// stable ids and data attributes of console/ui, and compares it with what
// the test wrote through kcat, franz-go or the sluice CLI. Every wait is a
// poll with a deadline; nothing asserts on timing.
//
// Set SLUICE_CONSOLE_SHOTS to a directory to keep a full-page PNG of each
// checked page there (to look at the console by eye).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice/sluice/internal/testenv"
)

// chromiumPath is Debian's chromium, which scripts/test-deps.sh installs.
const chromiumPath = "/usr/bin/chromium"

// browserTab starts a headless chromium for t with a fresh profile under
// t.TempDir() and returns the context of its one tab. The browser is
// stopped, and its profile removed, when t ends. Without chromium the test
// fails under CI=true and skips elsewhere, as need does.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	testenv.NeedsProcess(t, chromiumPath)
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (make test installs it)", chromiumPath)
		}
		t.Skipf("%s is not installed; run make test-deps", chromiumPath)
	}
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests may run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		// Chromium's helpers can write into the profile for a moment
		// after the browser exits; t.TempDir's removal would fail.
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first run starts the browser, which lives as long as ctx: it
	// cannot take a timeout of its own, so a watchdog bounds it.
	watchdog := time.AfterFunc(60*time.Second, cancelAlloc)
	err := chromedp.Do(ctx)
	if !watchdog.Stop() {
		t.Fatalf("chromium did not start within 60s: %v", err)
	}
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// browse navigates the tab to url, within 30s.
func browse(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(nctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate to %s: %v", url, err)
	}
}

// do runs actions on the tab within 30s.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(dctx, actions...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, pageText(ctx))
	}
}

// eval evaluates a JavaScript expression in the page, within 10s.
func eval[T any](ctx context.Context, expr string) (T, error) {
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ectx, chromedp.Evaluate[T](expr))
}

// pageText is what the page shows, for failure messages.
func pageText(ctx context.Context) string {
	s, err := eval[string](ctx, `document.body ? document.body.innerText : ""`)
	if err != nil {
		return "(page text unavailable: " + err.Error() + ")"
	}
	return s
}

// waitJS polls a JavaScript expression every 100ms until ok accepts its
// value, and returns that value; after 30s it fails the test with the last
// value and the page's text.
func waitJS[T any](t *testing.T, ctx context.Context, what, expr string, ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := eval[T](ctx, expr)
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s (last value %v, error %v)\npage:\n%s", what, v, err, pageText(ctx))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor waits until a JavaScript condition holds.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	waitJS(t, ctx, what, "!!("+cond+")", func(b bool) bool { return b })
}

// jsStr quotes s as a JavaScript string literal.
func jsStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// attrSel is a CSS attribute selector [name="value"].
func attrSel(name, value string) string { return "[" + name + "=" + jsStr(value) + "]" }

// screenshot saves a full-page PNG as name.png in $SLUICE_CONSOLE_SHOTS, when
// that is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SLUICE_CONSOLE_SHOTS")
	if dir == "" {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

// consoleURL is the console's address on broker b, at the hash route.
func consoleURL(b *brokerProc, route string) string {
	return "http://" + b.httpAddr + "/#/" + route
}

// apiGet reads a JSON answer of broker b's API (no authentication) into v.
func apiGet(t *testing.T, b *brokerProc, path string, v any) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + b.httpAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// TestConsoleTopicFromKcat: a topic that kcat auto-creates by producing to
// it is listed with its partition count and message count, and its page
// shows each partition with a leader and offsets that add up.
func TestConsoleTopicFromKcat(t *testing.T) {
	kcat := need(t, "kcat")
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), "num.partitions=3")
	const topic, n = "kcat-made", 30
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	if _, stderr, err := run(t, 60*time.Second, in.String(), kcat, "-P", "-b", b.addr, "-t", topic, "-K:", "-X", "acks=all"); err != nil {
		t.Fatalf("kcat -P: %v\n%s\nbroker log:\n%s", err, stderr, b.logText())
	}

	ctx := browserTab(t)
	browse(t, ctx, consoleURL(b, "topics"))
	row := "document.querySelector(" + jsStr("tr"+attrSel("data-topic", topic)) + ")"
	waitFor(t, ctx, "topic row of "+topic, row)
	cell := func(col string) string {
		v, err := eval[string](ctx, row+".querySelector('[data-col="+col+"]').textContent")
		if err != nil {
			t.Fatalf("%s cell: %v", col, err)
		}
		return v
	}
	if got := cell("partitions"); got != "3" {
		t.Errorf("topics page: %s has %q partitions, want 3", topic, got)
	}
	if got := cell("messages"); got != strconv.Itoa(n) {
		t.Errorf("topics page: %s has %q messages, want %d", topic, got, n)
	}
	screenshot(t, ctx, "topics")

	// Follow the link: hash routing to the topic's page.
	do(t, ctx, "open the topic page", chromedp.Click(chromedp.CSS("tr"+attrSel("data-topic", topic)+" a")))
	waitFor(t, ctx, "topic page heading", `location.hash === "#/topics/`+topic+`" && document.getElementById("topic-name")`)
	type part struct {
		Partition string `json:"partition"`
		Leader    string `json:"leader"`
		Replicas  string `json:"replicas"`
		ISR       string `json:"isr"`
		Start     string `json:"start"`
		End       string `json:"end"`
	}
	parts := waitJS(t, ctx, "3 partition rows", `Array.from(document.querySelectorAll("tr[data-partition]")).map((r) => ({
		partition: r.dataset.partition,
		leader: r.querySelector("[data-col=leader]").textContent,
		replicas: r.querySelector("[data-col=replicas]").textContent,
		isr: r.querySelector("[data-col=isr]").textContent,
		start: r.querySelector("[data-col=start]").textContent,
		end: r.querySelector("[data-col=end]").textContent,
	}))`, func(ps []part) bool { return len(ps) == 3 })
	var cluster struct {
		ThisBroker int `json:"thisBroker"`
	}
	apiGet(t, b, "/api/cluster", &cluster)
	id := strconv.Itoa(cluster.ThisBroker)
	total := 0
	for i, p := range parts {
		if p.Partition != strconv.Itoa(i) || p.Leader != id || p.Replicas != id || p.ISR != id || p.Start != "0" {
			t.Errorf("partition row %d: %+v, want partition %d led by broker %s with replicas and ISR [%s] from offset 0", i, p, i, id, id)
		}
		end, err := strconv.Atoi(p.End)
		if err != nil {
			t.Errorf("partition %d end offset %q", i, p.End)
		}
		total += end
	}
	if total != n {
		t.Errorf("end offsets add up to %d, want the %d records kcat produced", total, n)
	}
	screenshot(t, ctx, "topic")
}

// TestConsoleGroupLagMatchesCLI: after a franz-go group member consumed the
// topic and committed part of it, the lag per partition on the group's page,
// and the group's total on the groups page, are what `sluice group describe`
// prints.
func TestConsoleGroupLagMatchesCLI(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), "group.initial.rebalance.delay.ms=0")
	const topic, group = "lagged", "console-lag"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v" + strconv.Itoa(i))})
	}
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	if err := cl2.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A group member reads both partitions and commits part of each: 3
	// records of partition 0 and 5 of partition 1 (lags 17 and 15).
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	keep := map[int32]int{0: 3, 1: 5}
	var commit []*kgo.Record
	seen := map[int32]int{}
	for seen[0] < keep[0] || seen[1] < keep[1] {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		for _, r := range fs.Records() {
			if seen[r.Partition] < keep[r.Partition] {
				commit = append(commit, r)
			}
			seen[r.Partition]++
		}
	}
	if err := cons.CommitRecords(ctx, commit...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cons.Close() // leaves the group, which keeps its offsets

	// The CLI's rows: partition -> lag, and the total. A partition
	// without a commit is "-" there and has no row in the console.
	cliLag := map[string]string{}
	cliTotal := 0
	for _, r := range table(t, cliOK(t, b.addr, "group", "describe", group).stdout, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET") {
		if r["TOPIC"] != topic {
			t.Fatalf("describe row %v", r)
		}
		if r["CURRENT-OFFSET"] == "-" && r["LAG"] == "-" {
			continue
		}
		lag, err := strconv.Atoi(r["LAG"])
		if err != nil {
			t.Fatalf("describe row %v: LAG is not a number", r)
		}
		cliLag[r["PARTITION"]] = r["LAG"]
		cliTotal += lag
	}
	if cliLag["0"] != "17" || cliLag["1"] != "15" {
		t.Fatalf("sluice group describe shows lags %v, want 17 and 15 after committing 3 and 5 of 20", cliLag)
	}

	tab := browserTab(t)
	browse(t, tab, consoleURL(b, "groups"))
	total := waitJS(t, tab, "group row with lag", `(() => {
		const c = document.querySelector(`+jsStr("tr"+attrSel("data-group", group)+" [data-col=lag]")+`);
		return c ? c.dataset.lag : "";
	})()`, func(s string) bool { return s != "" })
	if total != strconv.Itoa(cliTotal) {
		t.Errorf("groups page: lag of %s is %s, sluice group describe adds up to %d", group, total, cliTotal)
	}
	screenshot(t, tab, "groups")

	browse(t, tab, consoleURL(b, "groups/"+group))
	shown := waitJS(t, tab, "lag rows", `Object.fromEntries(Array.from(document.querySelectorAll("tr[data-lag-partition]")).map((r) =>
		[r.dataset.topic + ":" + r.dataset.lagPartition, r.querySelector("[data-col=lag]").dataset.lag]))`,
		func(m map[string]string) bool { return len(m) > 0 })
	want := map[string]string{}
	for p, lag := range cliLag {
		want[topic+":"+p] = lag
	}
	if fmt.Sprint(shown) != fmt.Sprint(want) {
		t.Errorf("group page lag per partition %v, sluice group describe %v", shown, want)
	}
	screenshot(t, tab, "group")
}

// TestConsoleBrowseJSONRecord: the message browser, driven through its
// form, shows a record's key as text, its JSON value pretty-printed, its
// header, and the value's bytes in hex on request.
func TestConsoleBrowseJSONRecord(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"))
	const topic = "browse-me"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := `{"id":42,"item":"widget <b>","tags":["a","b"],"price":9.5}`
	rec := &kgo.Record{Topic: topic, Key: []byte("order-42"), Value: []byte(value),
		Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("e2e")}}}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("plain text first")}, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}

	tab := browserTab(t)
	browse(t, tab, consoleURL(b, "messages"))
	waitFor(t, tab, "the topic in the browser's topic list", "document.querySelector("+jsStr("#browse-topic option"+attrSel("value", topic))+")")
	do(t, tab, "fill in the browser's form",
		chromedp.SetValue(chromedp.CSS("#browse-topic"), topic),
		chromedp.SetValue(chromedp.CSS("#browse-partition"), "0"),
		chromedp.SetValue(chromedp.CSS("#browse-mode"), "offset"),
		chromedp.SetValue(chromedp.CSS("#browse-offset"), "1"),
		chromedp.Click(chromedp.CSS("#browse-go")))
	row := `document.querySelector('#records tr[data-offset="1"]')`
	waitFor(t, tab, "record at offset 1", row)
	if k := text(t, tab, row+`.querySelector('[data-field=key] pre').textContent`); k != "order-42" {
		t.Errorf("key shown as %q, want order-42", k)
	}
	wantJSON := `{
  "id": 42,
  "item": "widget <b>",
  "tags": [
    "a",
    "b"
  ],
  "price": 9.5
}`
	if f := text(t, tab, row+`.querySelector('[data-field=value]').dataset.format`); f != "json" {
		t.Errorf("value shown as %q, want json", f)
	}
	if v := text(t, tab, row+`.querySelector('[data-field=value] pre').textContent`); v != wantJSON {
		t.Errorf("value shown as\n%s\nwant\n%s", v, wantJSON)
	}
	if h := text(t, tab, row+`.querySelector('[data-header="source"] pre').textContent`); h != "e2e" {
		t.Errorf("header source shown as %q, want e2e", h)
	}
	if next := text(t, tab, `document.getElementById("records").dataset.nextOffset`); next != "2" {
		t.Errorf("nextOffset %q, want 2", next)
	}
	screenshot(t, tab, "messages")

	do(t, tab, "show the value in hex", chromedp.Click(chromedp.CSS(`#records tr[data-offset="1"] [data-field=value] button[data-show=hex]`)))
	if v := text(t, tab, row+`.querySelector('[data-field=value] pre').textContent`); !strings.HasPrefix(v, "000000  7b 22 69 64 22 3a 34 32") {
		t.Errorf("value in hex:\n%s", v)
	}
}

// TestConsoleThroughputChart: while `sluice perf produce` runs, the
// overview's messages-in rate becomes positive and the chart's points
// change.
func TestConsoleThroughputChart(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"))
	tab := browserTab(t)
	browse(t, tab, consoleURL(b, ""))
	chart := `document.getElementById("throughput-chart")`
	// Two samples make the first rate: an idle broker's.
	before := waitJS(t, tab, "a first point on the chart", chart+`.dataset.points || ""`, func(s string) bool { return s != "" })
	if r := text(t, tab, `document.getElementById("rate-messages-in").dataset.value`); r != "0" {
		t.Errorf("messages-in rate of an idle broker %q, want 0", r)
	}

	pctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	perf := exec.CommandContext(pctx, sluiceBinary(t), "perf", "produce", "--bootstrap-server", b.addr,
		"--topic", "perf-chart", "--record-size", "100", "--target-rate", "2000", "--duration", "60s", "--quiet")
	perf.Cancel = func() error { return perf.Process.Signal(syscall.SIGINT) } // still prints its summary
	perf.WaitDelay = 10 * time.Second
	var out strings.Builder
	perf.Stdout, perf.Stderr = &out, &out
	if err := perf.Start(); err != nil {
		t.Fatal(err)
	}
	// stopPerf stops perf (once) and returns what it printed; out is read
	// only after the process and its copying goroutines are done.
	var stopOnce sync.Once
	stopPerf := func() string {
		stopOnce.Do(func() {
			cancel()
			_ = perf.Wait()
		})
		return out.String()
	}
	defer stopPerf()

	// The API first, so that a broker whose counters do not move fails
	// with that, not with a chart that stays flat.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var tp struct {
			MessagesIn int64 `json:"messagesIn"`
		}
		apiGet(t, b, "/api/throughput", &tp)
		if tp.MessagesIn > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/throughput reports messagesIn 0 for 30s while sluice perf produce runs\nperf:\n%s", stopPerf())
		}
		time.Sleep(200 * time.Millisecond)
	}
	rate := waitJS(t, tab, "a positive messages-in rate", `Number(document.getElementById("rate-messages-in").dataset.value || 0)`,
		func(r float64) bool { return r > 0 })
	t.Logf("messages in: %.0f/s shown", rate)
	after := waitJS(t, tab, "the chart's points to show the load", chart+`.dataset.points`, func(s string) bool {
		for _, p := range strings.Split(s, ",") {
			if n, _ := strconv.Atoi(p); n > 0 {
				return true
			}
		}
		return false
	})
	if after == before {
		t.Errorf("chart points did not change: %s", after)
	}
	shown := text(t, tab, `document.getElementById("rate-messages-in").textContent`)
	if !strings.HasSuffix(shown, "/s") || strings.HasPrefix(shown, "0 ") {
		t.Errorf("messages-in rate shown as %q", shown)
	}
	screenshot(t, tab, "overview")
}

// text evaluates a JavaScript string expression or fails the test.
func text(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := eval[string](ctx, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// TestConsoleACLHidesTopics: under ACLs, a user with Describe on one topic
// only (alice, by HTTP basic auth against the broker's SASL PLAIN users)
// sees that topic in the console and not the other, and a clear 403 when
// she browses its records (Describe is not Read); a request without a user
// is refused.
func TestConsoleACLHidesTopics(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ` +
		`user_admin="admin-secret" user_alice="alice-secret";`
	b := startBroker(t, filepath.Join(t.TempDir(), "data"),
		"listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
		"super.users=User:admin",
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"visible", "hidden"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("visible").Operations(kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("ACL: %v %+v", err, res)
	}
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}

	// Without a user, the API asks for one; the admin sees both topics.
	get := func(auth string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+b.httpAddr+"/api/topics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body strings.Builder
		_, _ = fmt.Fprint(&body, resp.Header.Get("WWW-Authenticate"))
		var v struct {
			Topics []struct{ Name string } `json:"topics"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		for _, tp := range v.Topics {
			body.WriteString(" " + tp.Name)
		}
		return resp.StatusCode, body.String()
	}
	if code, body := get(""); code != http.StatusUnauthorized || !strings.HasPrefix(body, "Basic") {
		t.Errorf("GET /api/topics without a user: %d %q, want 401 with WWW-Authenticate: Basic", code, body)
	}
	if code, body := get(basic("admin", "admin-secret")); code != http.StatusOK || !strings.Contains(body, " hidden") || !strings.Contains(body, " visible") {
		t.Errorf("GET /api/topics as admin: %d %q, want both topics", code, body)
	}

	tab := browserTab(t)
	do(t, tab, "send alice's basic auth",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
				Headers: network.Headers{"Authorization": basic("alice", "alice-secret")}})
			return err
		}))
	browse(t, tab, consoleURL(b, "topics"))
	waitFor(t, tab, "topic visible listed", `document.querySelector('tr[data-topic="visible"]')`)
	if n := text(t, tab, `String(document.querySelectorAll('tr[data-topic="hidden"]').length)`); n != "0" {
		t.Errorf("alice sees topic hidden")
	}
	if p := text(t, tab, `document.getElementById("principal").textContent`); p != "User:alice" {
		t.Errorf("principal shown as %q, want User:alice", p)
	}
	if hidden := text(t, tab, `String(document.getElementById("nav-create").hidden)`); hidden != "true" {
		t.Errorf("alice may not create topics but the Create topic link shows")
	}
	screenshot(t, tab, "acl-topics")

	// Describe is not Read: browsing visible's records shows the 403.
	browse(t, tab, consoleURL(b, "messages?topic=visible&partition=0&offset=0"))
	waitFor(t, tab, "a 403 in the message browser", `document.querySelector('.error[data-error-status="403"]')`)
	screenshot(t, tab, "acl-messages")
}

// TestConsoleCreateTopicAndProduce: the create-topic form makes a topic
// with the broker's default partition count and shows the API's 409 when
// the name is taken; the topic page's form produces a record with a key, a
// value and a header, which a Kafka client then reads back as sent.
func TestConsoleCreateTopicAndProduce(t *testing.T) {
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), "num.partitions=2")
	const topic = "made-in-console"
	tab := browserTab(t)
	browse(t, tab, consoleURL(b, ""))
	waitFor(t, tab, "the Create topic link (anonymous may create)", `!document.getElementById("nav-create").hidden`)
	create := func() {
		t.Helper()
		do(t, tab, "open the create form", chromedp.Click(chromedp.CSS("#nav-create")))
		waitFor(t, tab, "the create form", `document.getElementById("create-form")`)
		do(t, tab, "fill in and submit the create form",
			chromedp.SetValue(chromedp.CSS("#create-form [name=name]"), topic),
			chromedp.SetValue(chromedp.CSS("#create-form [name=configs]"), "retention.ms=3600000"),
			chromedp.Click(chromedp.CSS("#create-form button[type=submit]")))
	}
	create()
	waitFor(t, tab, "the new topic's page with 2 partitions", `location.hash === "#/topics/`+topic+`" &&
		document.querySelectorAll("tr[data-partition]").length === 2`)
	if v := text(t, tab, `document.querySelector('tr[data-config="retention.ms"] td:nth-child(2)').textContent`); v != "3600000" {
		t.Errorf("retention.ms shown as %q, want the 3600000 the form set", v)
	}

	// Produce through the topic page's form, to partition 1.
	do(t, tab, "fill in and submit the produce form",
		chromedp.SetValue(chromedp.CSS("#produce-form [name=partition]"), "1"),
		chromedp.SetValue(chromedp.CSS("#produce-form [name=key]"), "k1"),
		chromedp.SetValue(chromedp.CSS("#produce-form [name=value]"), "hello from the console"),
		chromedp.SetValue(chromedp.CSS("#produce-form [name=headers]"), "origin=browser"),
		chromedp.Click(chromedp.CSS("#produce-form button[type=submit]")))
	waitFor(t, tab, "the produce result", `document.querySelector('#produce-result .ok[data-partition="1"][data-offset="0"]')`)
	screenshot(t, tab, "produced")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume the produced record: %v", err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got = fs.Records()
	}
	r := got[0]
	if string(r.Key) != "k1" || string(r.Value) != "hello from the console" || len(r.Headers) != 1 ||
		r.Headers[0].Key != "origin" || string(r.Headers[0].Value) != "browser" {
		t.Errorf("record read back: key %q value %q headers %v", r.Key, r.Value, r.Headers)
	}

	// The same name again: the API's 409, shown on the form.
	create()
	waitFor(t, tab, "the 409 on the create form", `document.querySelector('#create-result .error[data-error-status="409"]')`)
}
