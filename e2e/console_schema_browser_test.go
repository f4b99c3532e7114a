package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleSchemas: two versions of a subject registered with the
// `sluice schema register` binary are listed on the console's Schemas
// page (latest version 2 and its id, as `sluice schema get` prints), and
// the subject's page shows version 1's schema, the same JSON as
// registered, after following its version link.
func TestConsoleSchemas(t *testing.T) {
	sluice := sluiceBinary(t)
	reg := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	b := startBroker(t, filepath.Join(t.TempDir(), "data"), "schema.registry.listeners="+reg)
	const subject = "orders-value"
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"qty","type":"int","default":1}]}`
	for _, s := range []string{v1, v2} {
		// The registry starts just after the Kafka listeners startBroker
		// waited for: a refused connection is tried again, bounded.
		for try := 1; ; try++ {
			out, errOut, err := run(t, 60*time.Second, "", sluice, "schema", "register", subject, "--schema", s, "--registry", reg)
			if err == nil {
				break
			}
			if try == 50 || !strings.Contains(errOut, "connection refused") {
				t.Fatalf("sluice schema register: %v\n%s%s\nbroker log:\n%s", err, out, errOut, b.logText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	out, errOut, err := run(t, 60*time.Second, "", sluice, "schema", "get", subject, "--registry", reg)
	if err != nil {
		t.Fatalf("sluice schema get: %v\n%s", err, errOut)
	}
	var wantID string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "ID: "); ok {
			wantID = v
		}
	}
	if wantID == "" {
		t.Fatalf("sluice schema get printed no ID:\n%s", out)
	}

	ctx := browserTab(t)
	browse(t, ctx, consoleURL(b, "schemas"))
	row := "document.querySelector(" + jsStr("tr"+attrSel("data-subject", subject)) + ")"
	waitFor(t, ctx, "subject row of "+subject, row)
	cells := waitJS(t, ctx, "the row's cells", `[`+row+`.querySelector("[data-col=latest]").textContent, `+row+`.querySelector("[data-col=id]").textContent, `+
		row+`.querySelector("[data-col=versions]").textContent, `+row+`.querySelector("[data-col=type]").textContent]`,
		func(v []string) bool { return len(v) == 4 })
	if cells[0] != "2" || cells[1] != wantID || cells[2] != "2" || cells[3] != "AVRO" {
		t.Errorf("schemas page row: latest %q, id %q, versions %q, type %q; want 2, %s (sluice schema get), 2, AVRO", cells[0], cells[1], cells[2], cells[3], wantID)
	}
	screenshot(t, ctx, "schemas")

	do(t, ctx, "open the subject", chromedp.Click(chromedp.CSS("tr"+attrSel("data-subject", subject)+" a")))
	waitFor(t, ctx, "subject page at version 2", `document.getElementById("schema-version") && document.getElementById("schema-version").textContent === "2"`)
	do(t, ctx, "open version 1", chromedp.Click(chromedp.CSS("#schema-versions a"+attrSel("data-version", "1"))))
	waitFor(t, ctx, "version 1 shown", `document.getElementById("schema-version").textContent === "1"`)
	text := waitJS(t, ctx, "the schema text", `document.getElementById("schema-text").textContent`, func(s string) bool { return s != "" })
	var got, want any
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("the page's schema is not JSON: %v\n%s", err, text)
	}
	json.Unmarshal([]byte(v1), &want)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("version 1's schema on the page:\n%s\nwant %s", text, v1)
	}
	screenshot(t, ctx, "schema-subject")
}
