// Package fetchresp encodes the Kafka Fetch response (API key 1), versions
// 4 through 16, straight into a zerocopy.Writer: the framing is appended as
// bytes and each partition's records go in as a zerocopy.Slice, so a segment
// file range reaches the socket by sendfile(2) without being copied. Every
// other API is encoded with kmsg; this is the one hand-written encoder, kept
// byte-identical to kmsg.FetchResponse.AppendTo (the tests prove it).
//
// Wire layout (all integers big-endian; "flex" = v12+):
//
//	+------------------+----------------------------------------------------+
//	| size       int32 | bytes after this field                              |
//	| correlation int32| response header v0 (v4..v11)                        |
//	| header tags  uv  | flex only: response header v1, always 0 (no tags)   |
//	+------------------+----------------------------------------------------+
//	| throttle_ms int32|                                                     |
//	| error_code  int16| v7+                                                 |
//	| session_id  int32| v7+                                                 |
//	| topics     array | int32 count; flex: uvarint count+1                  |
//	|   topic   string | v4..v12: int16 len+bytes; flex: uvarint len+1+bytes |
//	|   topic_id  uuid | v13+: 16 bytes instead of the name                  |
//	|   partitions arr |                                                     |
//	|     partition       int32                                              |
//	|     error_code      int16                                              |
//	|     high_watermark  int64                                              |
//	|     last_stable     int64                                              |
//	|     log_start       int64  v5+                                         |
//	|     aborted  nullable arr  null = int32 -1 / flex uvarint 0            |
//	|       producer_id int64, first_offset int64, flex: tags (0)            |
//	|     preferred_read_replica int32  v11+                                 |
//	|     records  NULLABLE_RECORDS: int32 len, then the bytes               |
//	|              flex: COMPACT_NULLABLE_RECORDS: uvarint len+1, bytes      |
//	|     flex: tags  uvarint count, then per tag (ascending):               |
//	|           uvarint tag, uvarint size, body                             |
//	|           0 diverging_epoch  {epoch int32, end_offset int64, tags}    |
//	|           1 current_leader   {leader_id int32, leader_epoch int32, tags}|
//	|           2 snapshot_id      {end_offset int64, epoch int32, tags}    |
//	|   flex: topic tags (0)                                                 |
//	| flex: tags: v16+ tag 0 node_endpoints: compact array of               |
//	|       {node_id int32, host compact string, port int32,                 |
//	|        rack compact nullable string, tags (0)}                         |
//	+-----------------------------------------------------------------------+
//
// Field order per version follows kmsg's FetchResponse (franz-go
// pkg/kmsg/generated.go), which follows Kafka's FetchResponse.json.
package fetchresp

// Supported versions. v4 is the first with RecordBatch v2 (magic 2) records;
// v16 adds the node endpoints tag (KIP-951).
const (
	MinVersion int16 = 4
	MaxVersion int16 = 16
)

// firstFlexible is the first version with compact encodings and tagged fields.
const firstFlexible = 12
