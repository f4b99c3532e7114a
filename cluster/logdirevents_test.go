package cluster

import (
	"errors"
	"testing"
)

// TestLogDirEventNotificationFormat: the notification a broker writes is
// Kafka's LogDirEventNotificationSequenceZNode bytes, and the controller
// reads Kafka's and refuses anything else as a corrupt znode.
func TestLogDirEventNotificationFormat(t *testing.T) {
	data, err := jsonMarshal(logDirEventNotification{Version: 1, Broker: 3, Event: logDirFailureEvent})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"version":1,"broker":3,"event":1}` {
		t.Fatalf("encoded %s", data)
	}
	for _, tc := range []struct {
		name   string
		data   string
		broker int32
		ok     bool
	}{
		{"kafka's", `{"version":1,"broker":7,"event":1}`, 7, true},
		{"field order", `{"event":1,"broker":0,"version":1}`, 0, true},
		{"other version", `{"version":2,"broker":7,"event":1}`, 0, false},
		{"other event", `{"version":1,"broker":7,"event":2}`, 0, false},
		{"negative broker", `{"version":1,"broker":-1,"event":1}`, 0, false},
		{"not json", `log dir failed`, 0, false},
		{"empty", ``, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := parseLogDirEvent("/log_dir_event_notification/log_dir_event_0000000000", []byte(tc.data))
			if tc.ok != (err == nil) || tc.ok && id != tc.broker {
				t.Fatalf("parse %q: broker %d, err %v", tc.data, id, err)
			}
			if err != nil && !errors.Is(err, ErrCorruptZnode) {
				t.Fatalf("error %v is not ErrCorruptZnode", err)
			}
		})
	}
}
