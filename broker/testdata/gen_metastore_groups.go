//go:build ignore

// gen_metastore_groups writes testdata/metastore-groups.tar.gz: the data dir
// of a single-node broker from the release whose group coordinator kept its
// groups and committed offsets only in the metastore (no __consumer_offsets
// topic). broker/upgrade_test.go starts today's broker on it.
//
// It was run once, from the commit before the group coordinator moved onto
// __consumer_offsets on a single node; running it again with a later broker
// writes a later layout, which is not what the upgrade test is for.
//
//	go run ./broker/testdata/gen_metastore_groups.go
//
// Contents (checked by broker/upgrade_test.go):
//   - topic "upgrade" with 3 partitions, 30 records in each;
//   - group "left": a consumer joined, consumed partition 0..2, committed and
//     left (the group is Empty with protocol type "consumer" and its offsets);
//   - group "multi": offsets committed with kadm (no members) on all three
//     partitions of "upgrade", with metadata, at offsets 10, 20 and 30.
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/broker"
	"github.com/sluice/sluice/config"
)

const out = "broker/testdata/metastore-groups.tar.gz"

func main() {
	dir, err := os.MkdirTemp("", "sluice-fixture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.HTTPListeners = nil
	cfg.LogDirs = []string{dir}
	cfg.LogRetentionCheck = 0
	cfg.LogSegmentBytes = 64 << 10
	cfg.LogIndexSizeMaxBytes = 4 << 10
	cfg.GroupInitialRebalanceDelay = 0
	b, err := broker.Start(cfg, broker.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := populate(ctx, b.Addr()); err != nil {
		b.Close()
		log.Fatal(err)
	}
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	if err := tarDir(dir, out); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", out)
}

func populate(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "upgrade"); err != nil {
		return err
	}
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 30; i++ {
			r := &kgo.Record{Topic: "upgrade", Partition: p, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprint("value-", p, "-", i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				return err
			}
		}
	}

	// "left": a member joins, consumes everything, commits and leaves.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("left"), kgo.ConsumeTopics("upgrade"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ClientID("fixture-left"))
	if err != nil {
		return err
	}
	got := 0
	for got < 90 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			cons.Close()
			return err
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		cons.Close()
		return err
	}
	cons.Close() // LeaveGroup

	// "multi": simple commits on three partitions, no members.
	var os kadm.Offsets
	for p, at := range []int64{10, 20, 30} {
		os.Add(kadm.Offset{Topic: "upgrade", Partition: int32(p), At: at, LeaderEpoch: -1, Metadata: "m" + strconv.Itoa(p)})
	}
	resp, err := adm.CommitOffsets(ctx, "multi", os)
	if err != nil {
		return err
	}
	return resp.Error()
}

// tarDir writes the regular files and directories under dir to a gzipped tar
// at dst, with paths relative to dir.
func tarDir(dir, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
