package cluster

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
)

// FuzzDecodeZnodes feeds the same bytes to every decoder of a znode
// (format.go's layout): broker registration, topic assignment, partition
// state, /controller, /controller_epoch, /cluster/id, topic config, ISR
// change and config change notifications. Every decoder runs on every
// input, so one corpus of real znodes of each kind feeds them all.
// Invariants, for each decoder:
//
//   - it never panics, and a failure wraps ErrCorruptZnode (the config
//     change parser, whose caller only logs, returns json's error);
//   - it never returns more entries than the input can hold: partitions
//     at 6 bytes each (`"0":[1]`), ISR members, replicas and notified
//     partitions at 2 (`1,`, `{}`), config entries at 5 (`"":""`);
//   - what it returns is usable: a broker has a host and a port in
//     0-65535, every partition of an assignment has replicas, a controller
//     id and an epoch are >= 0, a cluster id and a notified topic are not
//     empty;
//   - re-parsing is stable: encoding the result the way the broker writes
//     that znode and decoding it again gives the same result.
func FuzzDecodeZnodes(f *testing.F) {
	for _, s := range []string{
		`{"version":5,"host":"h1","port":9092,"endpoints":["PLAINTEXT://h1:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"rack":"r1","jmx_port":-1,"timestamp":"1"}`,
		`{"version":5,"host":null,"port":-1,"endpoints":["SSL://[::1]:9093"],"jmx_port":-1}`,
		`{"version":5,"endpoints":["PLAINTEXT://h:99999"]}`,
		`{"port":-1}`, // found by the fuzzer: a broker with no address
		`{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},"removing_replicas":{}}`,
		`{"version":1,"partitions":{"1":[1],"0":[2]}}`,
		`{"version":1,"partitions":{"0":[1],"00":[2]}}`,
		`{"version":1,"partitions":{"0":[]}}`,
		`{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAA==","partitions":{"0":[1]}}`,
		`{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}`,
		`{"controller_epoch":3,"leader":-1,"leader_epoch":7,"isr":null}`,
		`{"version":1,"brokerid":2,"timestamp":"1"}`,
		`{"version":1}`,
		`null`,
		`3`,
		`-1`,
		`4294967297`,
		`0`,
		`{"version":"1","id":"a2V5LWNsdXN0ZXItaWQ"}`,
		`{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}`,
		`{"version":1,"config":null}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}`,
		`{"version":2,"entity_path":"topics/t"}`,
		`{"version":2,"entity_path":"topics/"}`,
		`{"version":2,"entity_path":"brokers/<default>"}`,
		``,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wraps := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, ErrCorruptZnode) {
				t.Fatalf("%s: error %v does not wrap ErrCorruptZnode", what, err)
			}
		}

		if b, err := decodeBroker(7, data, 42); err != nil {
			wraps("decodeBroker", err)
		} else {
			if b.ID != 7 || b.Epoch != 42 || b.Host == "" || b.Port < 0 || b.Port > 65535 {
				t.Fatalf("decodeBroker: %+v, want id 7, epoch 42 and an address", b)
			}
			enc, _ := json.Marshal(newBrokerRegistration(b.Host, b.Port, b.Rack))
			b2, err := decodeBroker(7, enc, 42)
			// The re-encoding names only its own endpoint.
			same := b2.ID == b.ID && b2.Host == b.Host && b2.Port == b.Port && b2.Rack == b.Rack && b2.Epoch == b.Epoch
			if err != nil || !same {
				t.Fatalf("decodeBroker: re-parse of %+v gave %+v, %v", b, b2, err)
			}
		}

		if id, parts, err := decodeAssignment("t", data); err != nil {
			wraps("decodeAssignment", err)
		} else {
			if len(parts)*6 > len(data) {
				t.Fatalf("decodeAssignment: %d partitions from %d bytes", len(parts), len(data))
			}
			for p, rs := range parts {
				if len(rs) == 0 {
					t.Fatalf("decodeAssignment: partition %d has no replicas", p)
				}
				if len(rs)*2 > len(data) {
					t.Fatalf("decodeAssignment: %d replicas from %d bytes", len(rs), len(data))
				}
			}
			id2, parts2, err := decodeAssignment("t", encodeAssignment(id, parts))
			if err != nil || id2 != id || !slices.EqualFunc(parts2, parts, slices.Equal) {
				t.Fatalf("decodeAssignment: re-parse of %x %v gave %x %v, %v", id, parts, id2, parts2, err)
			}
		}

		if st, err := decodePartitionState("p", data); err != nil {
			wraps("decodePartitionState", err)
		} else {
			if len(st.ISR)*2 > len(data) {
				t.Fatalf("decodePartitionState: %d ISR members from %d bytes", len(st.ISR), len(data))
			}
			st2, err := decodePartitionState("p", encodePartitionState(st))
			if err != nil || st2.ControllerEpoch != st.ControllerEpoch || st2.Leader != st.Leader ||
				st2.LeaderEpoch != st.LeaderEpoch || !slices.Equal(st2.ISR, st.ISR) {
				t.Fatalf("decodePartitionState: re-parse of %+v gave %+v, %v", st, st2, err)
			}
		}

		if id, err := decodeControllerID(data); err != nil {
			wraps("decodeControllerID", err)
		} else {
			if id < 0 {
				t.Fatalf("decodeControllerID: %d", id)
			}
			enc, _ := json.Marshal(controllerZNode{Version: 1, BrokerID: id, Timestamp: "1"})
			if id2, err := decodeControllerID(enc); err != nil || id2 != id {
				t.Fatalf("decodeControllerID: re-parse of %d gave %d, %v", id, id2, err)
			}
		}

		if e, err := parseControllerEpoch(data); err != nil {
			wraps("parseControllerEpoch", err)
		} else {
			if e < 0 {
				t.Fatalf("parseControllerEpoch: %d", e)
			}
			if e2, err := parseControllerEpoch([]byte(strconv.Itoa(int(e)))); err != nil || e2 != e {
				t.Fatalf("parseControllerEpoch: re-parse of %d gave %d, %v", e, e2, err)
			}
		}

		if id, err := parseClusterID(data); err != nil {
			wraps("parseClusterID", err)
		} else {
			if id == "" {
				t.Fatal("parseClusterID: empty id")
			}
			enc, _ := json.Marshal(clusterIDZNode{Version: "1", ID: id})
			if id2, err := parseClusterID(enc); err != nil || id2 != id {
				t.Fatalf("parseClusterID: re-parse of %q gave %q, %v", id, id2, err)
			}
		}

		if c, err := parseTopicConfig("t", data); err != nil {
			wraps("parseTopicConfig", err)
		} else {
			if c == nil || len(c)*5 > len(data) {
				t.Fatalf("parseTopicConfig: %d entries (nil: %v) from %d bytes", len(c), c == nil, len(data))
			}
			if c2, err := parseTopicConfig("t", encodeTopicConfig(c)); err != nil || !maps.Equal(c2, c) {
				t.Fatalf("parseTopicConfig: re-parse of %v gave %v, %v", c, c2, err)
			}
		}

		if tps, err := parseIsrChange("n", data); err != nil {
			wraps("parseIsrChange", err)
		} else {
			if len(tps)*2 > len(data) {
				t.Fatalf("parseIsrChange: %d partitions from %d bytes", len(tps), len(data))
			}
			enc, _ := json.Marshal(isrChangeNotification{Version: 1, Partitions: tps})
			if tps2, err := parseIsrChange("n", enc); err != nil || !slices.Equal(tps2, tps) {
				t.Fatalf("parseIsrChange: re-parse of %v gave %v, %v", tps, tps2, err)
			}
		}

		if topic, ok, err := parseConfigChange(data); err == nil && ok {
			if topic == "" {
				t.Fatal("parseConfigChange: empty topic")
			}
			enc, _ := json.Marshal(configChangeNote{Version: 2, EntityPath: "topics/" + topic})
			if t2, ok2, err := parseConfigChange(enc); err != nil || !ok2 || t2 != topic {
				t.Fatalf("parseConfigChange: re-parse of %q gave %q %v, %v", topic, t2, ok2, err)
			}
		}
	})
}

// TestDecodeRejects lists znodes the decoders once accepted with a wrong
// meaning, and must now reject.
func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name   string
		decode func([]byte) error
		data   string
	}{
		{"controller null is not broker 0", decodeControllerIDErr, `null`},
		{"controller without brokerid is not broker 0", decodeControllerIDErr, `{"version":1}`},
		{"controller id past int32 does not wrap", decodeControllerIDErr, `4294967297`},
		{"controller id negative", decodeControllerIDErr, `{"brokerid":-1}`},
		{"controller epoch past int32 does not wrap", func(b []byte) error { _, err := parseControllerEpoch(b); return err }, `4294967296`},
		{"controller epoch negative", func(b []byte) error { _, err := parseControllerEpoch(b); return err }, `-1`},
		{"partition 00 beside 0 leaves 1 without replicas", decodeAssignmentErr, `{"partitions":{"0":[1],"00":[2]}}`},
		{"partition +1", decodeAssignmentErr, `{"partitions":{"0":[1],"+1":[2]}}`},
		{"partition without replicas", decodeAssignmentErr, `{"partitions":{"0":[]}}`},
		{"endpoint port past 65535 does not wrap", decodeBrokerErr, `{"endpoints":["PLAINTEXT://h:4294967297"]}`},
		{"endpoint port not a number", decodeBrokerErr, `{"endpoints":["PLAINTEXT://h:x"]}`},
		{"endpoint without a port", decodeBrokerErr, `{"endpoints":["PLAINTEXT://h"]}`},
		{"no host and no endpoint", decodeBrokerErr, `{"port":-1}`},
		{"port out of range", decodeBrokerErr, `{"host":"h","port":70000}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.decode([]byte(tc.data)); !errors.Is(err, ErrCorruptZnode) {
				t.Fatalf("decoding %s: %v, want ErrCorruptZnode", tc.data, err)
			}
		})
	}
}

func decodeControllerIDErr(b []byte) error { _, err := decodeControllerID(b); return err }
func decodeAssignmentErr(b []byte) error   { _, _, err := decodeAssignment("t", b); return err }
func decodeBrokerErr(b []byte) error       { _, err := decodeBroker(1, b, 0); return err }
