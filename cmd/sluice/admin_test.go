package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCLIParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantPos []string
		wantN   int
		wantErr bool
	}{
		{name: "flags after name", args: []string{"t", "--n", "3"}, wantPos: []string{"t"}, wantN: 3},
		{name: "flags before name", args: []string{"-n=3", "t"}, wantPos: []string{"t"}, wantN: 3},
		{name: "mixed", args: []string{"a", "--n", "3", "b", "c"}, wantPos: []string{"a", "b", "c"}, wantN: 3},
		{name: "double dash", args: []string{"a", "--", "--n", "b"}, wantPos: []string{"a", "--n", "b"}},
		{name: "none", args: nil},
		{name: "unknown flag", args: []string{"a", "--bogus"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			n := fs.Int("n", 0, "")
			pos, err := parseInterspersed(fs, tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (!slices.Equal(pos, tc.wantPos) || *n != tc.wantN) {
				t.Fatalf("pos %q n %d, want %q %d", pos, *n, tc.wantPos, tc.wantN)
			}
		})
	}
}

func TestGroupParseTopicSpec(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    topicPartitions
		wantErr bool
	}{
		{in: "t", want: topicPartitions{topic: "t"}},
		{in: "t:0", want: topicPartitions{topic: "t", partitions: []int32{0}}},
		{in: "t:2,0,2", want: topicPartitions{topic: "t", partitions: []int32{2, 0}}},
		{in: ":1", wantErr: true},
		{in: "t:", wantErr: true},
		{in: "t:-1", wantErr: true},
		{in: "t:a", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTopicSpec(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (got.topic != tc.want.topic || !slices.Equal(got.partitions, tc.want.partitions)) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGroupParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "PT1H30M", want: 90 * time.Minute},
		{in: "P1DT2H", want: 26 * time.Hour},
		{in: "P2D", want: 48 * time.Hour},
		{in: "PT0.5S", want: 500 * time.Millisecond},
		{in: "PT55M30S", want: 55*time.Minute + 30*time.Second},
		{in: "90m", want: 90 * time.Minute},
		{in: "P", wantErr: true},
		{in: "PT", wantErr: true},
		{in: "-5m", wantErr: true},
		{in: "soon", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDuration(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGroupParseDatetime(t *testing.T) {
	utc := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "2024-05-01T12:00:00Z", want: utc},
		{in: "2024-05-01T14:00:00.000+02:00", want: utc},
		{in: "2024-05-01T12:00:00.250", want: time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.Local)},
		{in: "2024-05-01", wantErr: true},
		{in: "yesterday", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseDatetime(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTopicParseKVs(t *testing.T) {
	got, err := parseKVs("--config", []string{"retention.ms=1000", "cleanup.policy=compact,delete", "x="})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || *got["retention.ms"] != "1000" || *got["cleanup.policy"] != "compact,delete" || *got["x"] != "" {
		t.Fatalf("got %v", got)
	}
	for _, bad := range [][]string{{"novalue"}, {"=v"}, {"a=1", "a=2"}} {
		if _, err := parseKVs("--config", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCLIExitCodes checks the exit status and messages of mistakes caught
// before any broker is contacted.
func TestCLIExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"topic without subcommand", []string{"topic"}, 2, "usage: sluice topic SUBCOMMAND"},
		{"topic help", []string{"topic", "--help"}, 0, "alter-config"},
		{"unknown subcommand", []string{"group", "frob"}, 2, `unknown subcommand "frob"`},
		{"subcommand help", []string{"group", "reset-offsets", "--help"}, 0, "-to-datetime"},
		{"bad flag", []string{"topic", "list", "--bogus"}, 2, "flag provided but not defined"},
		{"create without name", []string{"topic", "create"}, 2, "exactly one topic name"},
		{"describe without group", []string{"group", "describe"}, 2, "at least one group"},
		{"reset without scenario", []string{"group", "reset-offsets", "g", "--topic", "t"}, 2, "exactly one of"},
		{"reset with two scenarios", []string{"group", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-offset", "3"}, 2, "exactly one of"},
		{"reset without topics", []string{"group", "reset-offsets", "g", "--to-latest"}, 2, "--all-topics"},
		{"reset bad offset", []string{"group", "reset-offsets", "g", "--topic", "t", "--to-offset", "-1"}, 2, "non-negative"},
		{"empty bootstrap", []string{"topic", "list", "--bootstrap-server", ","}, 2, "--bootstrap-server is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstderr:\n%s", code, tc.code, tc.want, stderr.String())
			}
		})
	}
}

func TestParseReplicaAssignment(t *testing.T) {
	got, err := parseReplicaAssignment("3:2,3:1, 2:1")
	if err != nil || len(got) != 3 || !slices.Equal(got[0], []int32{3, 2}) || !slices.Equal(got[2], []int32{2, 1}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"1,", ":1", "1:-2", "a", "1:2:x"} {
		if _, err := parseReplicaAssignment(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
