package fetchresp_test

import (
	"bytes"
	"fmt"

	"github.com/sluice/sluice/server/fetchresp"
	"github.com/sluice/sluice/zerocopy"
)

// How the broker answers a Fetch: one zerocopy.Writer per connection, Write
// per response (records from Log.Read go in as Slices, ownership included),
// Flush when the responses are ready to go. On a *net.TCPConn, file slices go
// by sendfile(2).
func ExampleWrite() {
	var conn bytes.Buffer // a *net.TCPConn in the broker
	w := zerocopy.NewWriter(&conn)

	records := zerocopy.BytesSlice([]byte("...record batches...")) // from engine Log.Read
	resp := &fetchresp.Response{
		SessionID: 0,
		Topics: []fetchresp.Topic{{
			Name: "orders",
			ID:   [16]byte{0x3f, 0x1c},
			Partitions: []fetchresp.Partition{{
				Partition:            0,
				HighWatermark:        42,
				LastStableOffset:     42,
				LogStartOffset:       0,
				PreferredReadReplica: -1,
				Records:              records, // now owned by w
			}},
		}},
	}
	if err := fetchresp.Write(w, 12, 7, resp); err != nil {
		fmt.Println("encode:", err) // ErrVersion or ErrTooLarge; nothing was queued
		return
	}
	if err := w.Flush(); err != nil {
		fmt.Println("send:", err) // the connection must be closed
		return
	}
	fmt.Println(conn.Len(), "bytes,", w.Stats().WriteBytes, "written directly")
	// Output: 87 bytes, 87 written directly
}
