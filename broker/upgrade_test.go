package broker_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker/brokertest"
	"github.com/sluice/sluice/config"
)

// untar unpacks the gzipped tar at src into dir.
func untar(t *testing.T, src, dir string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(h.Name, "..") {
			t.Fatalf("fixture path %q", h.Name)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestUpgradeMetastoreGroups starts a broker on a single-node data dir from
// the release that kept groups and committed offsets only in the metastore
// (testdata/metastore-groups.tar.gz, written by
// testdata/gen_metastore_groups.go) and checks that its groups and offsets
// are all there, then again after a restart.
func TestUpgradeMetastoreGroups(t *testing.T) {
	dir := t.TempDir()
	untar(t, filepath.Join("testdata", "metastore-groups.tar.gz"), dir)
	noDelay := func(c *config.Config) { c.GroupInitialRebalanceDelay = 0 }
	for round := 1; round <= 2; round++ {
		b := brokertest.StartIn(t, dir, "segment", noDelay)
		checkUpgradedGroups(t, b.Addr(), round)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func checkUpgradedGroups(t *testing.T, addr string, round int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// kgo commits its member id ("fixture-left-<uuid>") as the metadata,
	// so "left" is checked by prefix.
	want := map[string]map[int32]struct {
		at     int64
		meta   string
		prefix bool
	}{
		"left":  {0: {30, "fixture-left-", true}, 1: {30, "fixture-left-", true}, 2: {30, "fixture-left-", true}},
		"multi": {0: {10, "m0", false}, 1: {20, "m1", false}, 2: {30, "m2", false}},
	}
	for g, parts := range want {
		got, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatalf("round %d: fetch offsets of %s: %v", round, g, err)
		}
		if err := got.Error(); err != nil {
			t.Fatalf("round %d: fetch offsets of %s: %v", round, g, err)
		}
		if n := len(got["upgrade"]); n != len(parts) || len(got) != 1 {
			t.Fatalf("round %d: group %s has offsets %+v, want 3 partitions of upgrade", round, g, got)
		}
		for p, w := range parts {
			o, ok := got.Lookup("upgrade", p)
			if !ok || o.At != w.at || (w.prefix && !strings.HasPrefix(o.Metadata, w.meta)) || (!w.prefix && o.Metadata != w.meta) {
				t.Fatalf("round %d: group %s upgrade-%d: %+v (found %v), want offset %d metadata %q", round, g, p, o, ok, w.at, w.meta)
			}
		}
	}

	// The groups now live in __consumer_offsets, the metastore only its view.
	topics, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatalf("round %d: list topics: %v", round, err)
	}
	if d := topics["__consumer_offsets"]; d.Err != nil || len(d.Partitions) != int(config.Default().OffsetsTopicPartitions) {
		t.Fatalf("round %d: __consumer_offsets: %v, %d partitions", round, d.Err, len(d.Partitions))
	}
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatalf("round %d: end offsets of __consumer_offsets: %v", round, err)
	}
	var records int64
	ends.Each(func(o kadm.ListedOffset) { records += o.Offset })
	if records == 0 {
		t.Fatalf("round %d: __consumer_offsets is empty", round)
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("round %d: list groups: %v", round, err)
	}
	wantListed := map[string]string{"left": "consumer", "multi": ""} // group -> protocol type
	if len(listed) != len(wantListed) {
		t.Fatalf("round %d: listed groups %+v, want %v", round, listed, wantListed)
	}
	for g, pt := range wantListed {
		l, ok := listed[g]
		if !ok || l.ProtocolType != pt || l.State != "Empty" {
			t.Fatalf("round %d: listed group %s: %+v (found %v), want Empty with protocol type %q", round, g, l, ok, pt)
		}
	}
	described, err := adm.DescribeGroups(ctx, "left", "multi")
	if err != nil {
		t.Fatalf("round %d: describe groups: %v", round, err)
	}
	for g, pt := range wantListed {
		d, ok := described[g]
		if !ok || d.Err != nil || d.State != "Empty" || d.ProtocolType != pt || d.Protocol != "" || len(d.Members) != 0 {
			t.Fatalf("round %d: described group %s: %+v (found %v), want Empty with protocol type %q and no members", round, g, d, ok, pt)
		}
	}
}
