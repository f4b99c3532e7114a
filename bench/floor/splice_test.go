package floor

import (
	"encoding/binary"
	"net"
	"os"
	"testing"

	"github.com/sluice/sluice/record"
)

// TestSpliceLandsLog: what the splice mode leaves in each partition's file
// is a log: every batch whole, its CRC valid, baseOffset continuing the
// previous batch from 0 and partitionLeaderEpoch 0, the header written
// after the records, and nothing past the last batch.
func TestSpliceLandsLog(t *testing.T) {
	for _, tc := range []struct {
		name        string
		frame, size int
	}{
		{"1MiB-batches", 4 << 20, 1024}, // larger than the pipe: several splices a batch
		{"256KiB-batches", 1 << 20, 1024},
		{"1KiB-batches", 4 << 10, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Mode: "splice", Dir: t.TempDir(), FrameBytes: tc.frame, RecordSize: tc.size, ReaderCPU: -1, WriterCPU: -1}
			cfg.defaults()
			body := Frame(cfg)
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			frame = append(frame, body...)
			const frames = 6
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			werr := make(chan error, 1)
			go func() { werr <- feed(ln.Addr().String(), frame, frames, -1) }()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := newSink(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			raw, err := c.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := spliceRead(raw, frames, cfg, s); done <- err }()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			for p, f := range s.files {
				data, err := os.ReadFile(f.Name())
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(data)) != s.ends[p] {
					t.Fatalf("partition %d: file of %d bytes, end %d", p, len(data), s.ends[p])
				}
				var next int64
				batches := 0
				for pos := 0; pos < len(data); batches++ {
					b := record.Batch(data[pos:])
					n := b.Size()
					if n < record.HeaderSize || pos+n > len(data) {
						t.Fatalf("partition %d: batch of %d bytes at %d in %d", p, n, pos, len(data))
					}
					b = b[:n]
					if b.ComputeCRC() != b.CRC() || b.BaseOffset() != next || b.LeaderEpoch() != 0 {
						t.Fatalf("partition %d batch %d: crc %x want %x, base offset %d want %d, epoch %d", p, batches, b.ComputeCRC(), b.CRC(), b.BaseOffset(), next, b.LeaderEpoch())
					}
					next = b.LastOffset() + 1
					pos += n
				}
				if batches != frames {
					t.Fatalf("partition %d: %d batches, want %d", p, batches, frames)
				}
			}
		})
	}
}
