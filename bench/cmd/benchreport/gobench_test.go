package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shareOut = `goos: linux
goarch: amd64
pkg: github.com/sluice/sluice/bench
BenchmarkShareGroupConsume/group=share/members=1-2         	  100000	     14000 ns/op	  70.1 MB/s	 0.27 ack-p50-ms	 36.0 ack-p99-ms	 3781 B/op	 40 allocs/op
BenchmarkShareGroupConsume/group=share/members=1-2         	  100000	     13000 ns/op	  60.0 MB/s	 0.18 ack-p50-ms	 4.3 ack-p99-ms	 3790 B/op	 40 allocs/op
BenchmarkShareGroupConsume/group=share/members=1-2         	  100000	     2000 ns/op	  467 MB/s	 0.29 ack-p50-ms	 147 ack-p99-ms	 3700 B/op	 40 allocs/op
    share_test.go:99: a log line 12 that is not a result
BenchmarkShareGroupConsume/group=classic/members=1-2       	  100000	     1200 ns/op	  809 MB/s	 2.0 ack-p50-ms	 14 ack-p99-ms	 1234 B/op	 12 allocs/op
PASS
ok  	github.com/sluice/sluice/bench	100.1s
`

func TestGobenchTable(t *testing.T) {
	tb := newBenchTable()
	if err := tb.read(strings.NewReader(shareOut), "BenchmarkShareGroupConsume/"); err != nil {
		t.Fatal(err)
	}
	got := tb.markdown(parseCols("MB/s,ack-p99-ms=ack p99 ms,B/op"))
	want := "| group | members | MB/s | ack p99 ms | B/op |\n" +
		"|---|---|---:|---:|---:|\n" +
		"| share | 1 | 70.1 (60-467) | 36 (4.30-147) | 3,781 (3,700-3,790) |\n" +
		"| classic | 1 | 809 | 14 | 1,234 |\n"
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestGobenchPlainNames(t *testing.T) {
	tb := newBenchTable()
	in := "BenchmarkRegistryRead/none-2 3000 46000 ns/op 100 allocs/op\nBenchmarkRegistryRead/plain-2 3000 55000 ns/op 111 allocs/op\n"
	if err := tb.read(strings.NewReader(in), "BenchmarkRegistryRead/"); err != nil {
		t.Fatal(err)
	}
	got := tb.markdown(nil)
	want := "| benchmark | ns/op | allocs/op |\n|---|---:|---:|\n| none | 46,000 | 100 |\n| plain | 55,000 | 111 |\n"
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestGobenchUnionOfKeys(t *testing.T) {
	tb := newBenchTable()
	in := "BenchmarkTieredS3/op=copy-2 3 1 ns/op 92.0 MB/s\nBenchmarkTieredS3/op=consume/tier=local-2 3 1 ns/op 536 MB/s\n"
	if err := tb.read(strings.NewReader(in), "BenchmarkTieredS3/"); err != nil {
		t.Fatal(err)
	}
	got := tb.markdown(parseCols("MB/s"))
	want := "| op | tier | MB/s |\n|---|---|---:|\n| copy |  | 92 |\n| consume | local | 536 |\n"
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestGobenchRewritesSection(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "B.md")
	in := filepath.Join(dir, "out.txt")
	os.WriteFile(doc, []byte("# x\n<!-- bench:share -->\nold\n<!-- /bench:share -->\nafter\n"), 0o644)
	os.WriteFile(in, []byte(shareOut), 0o644)
	if err := gobenchCmd([]string{"-out", doc, "-section", "share", "-meta", "Run now.", "-cols", "MB/s", "-strip", "BenchmarkShareGroupConsume/", in}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	want := "# x\n<!-- bench:share -->\nRun now.\n\n| group | members | MB/s |\n|---|---|---:|\n| share | 1 | 70.1 (60-467) |\n| classic | 1 | 809 |\n<!-- /bench:share -->\nafter\n"
	if string(b) != want {
		t.Fatalf("doc:\n%s\nwant:\n%s", b, want)
	}
	// No result lines is an error, not an empty table.
	os.WriteFile(in, []byte("FAIL\n"), 0o644)
	if err := gobenchCmd([]string{"-out", doc, "-section", "share", in}); err == nil {
		t.Fatal("want an error for output without results")
	}
}
