package metastore

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

func openTest(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ms is a fixed time with millisecond precision, as the store keeps it.
var ms = time.UnixMilli(1_700_000_000_123)

func TestTopicRoundTrip(t *testing.T) {
	s := openTest(t, t.TempDir())
	cases := []struct {
		name  string
		topic Topic
	}{
		{"minimal", Topic{Name: "a", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{0}}}},
		{"configs", Topic{
			Name: "orders", ID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
			Partitions: 3, ReplicationFactor: 1, Assignment: [][]int32{{0}, {0}, {0}},
			Configs:   map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"},
			CreatedAt: ms,
		}},
		{"zero partitions", Topic{Name: "empty"}},
		{"odd name", Topic{Name: "x\x00y\xff", Partitions: 2, Assignment: [][]int32{{0, 1}, {1, 0}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.PutTopic(tc.topic); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetTopic(tc.topic.Name)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.topic
			if want.Configs == nil {
				want.Configs = map[string]string{}
			}
			if !got.CreatedAt.Equal(want.CreatedAt) {
				t.Fatalf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
			}
			got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
	t.Run("replace", func(t *testing.T) {
		tp := Topic{Name: "a", Partitions: 5, Assignment: make([][]int32, 5)}
		if err := s.PutTopic(tp); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetTopic("a")
		if got.Partitions != 5 {
			t.Fatalf("partitions = %d after replace", got.Partitions)
		}
	})
	t.Run("list sorted", func(t *testing.T) {
		ts, err := s.ListTopics()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tp := range ts {
			names = append(names, tp.Name)
		}
		want := []string{"a", "empty", "orders", "x\x00y\xff"}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("names = %q, want %q", names, want)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if err := s.DeleteTopic("orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetTopic("orders"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetTopic after delete: %v", err)
		}
		if err := s.DeleteTopic("orders"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second DeleteTopic: %v", err)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		if err := s.PutTopic(Topic{}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("PutTopic(empty name) = %v", err)
		}
	})
}

// TestPrefixIsolation checks that names which prefix each other, and the
// same name used by different kinds, never see each other's records.
func TestPrefixIsolation(t *testing.T) {
	s := openTest(t, t.TempDir())
	names := []string{"a", "a.b", "a\x00", "a\x00b", "ab", "", "x"}
	for i, n := range names {
		if n != "" {
			if err := s.PutTopic(Topic{Name: n, Partitions: int32(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutGroup(Group{Name: n, Generation: int32(i)}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutCheckpoint(n, []byte(n)); err != nil {
			t.Fatal(err)
		}
		// group n commits offsets on topic n (and on "x", another group's name).
		err := s.CommitOffsets(n, map[TopicPartition]CommittedOffset{
			{Topic: n, Partition: 0}:   {Offset: int64(i)},
			{Topic: "x", Partition: 1}: {Offset: int64(100 + i)},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range names {
		t.Run(fmt.Sprintf("name=%q", n), func(t *testing.T) {
			if n != "" {
				tp, err := s.GetTopic(n)
				if err != nil || tp.Partitions != int32(i) {
					t.Fatalf("GetTopic = %+v, %v", tp, err)
				}
			}
			g, err := s.GetGroup(n)
			if err != nil || g.Generation != int32(i) || g.Name != n {
				t.Fatalf("GetGroup = %+v, %v", g, err)
			}
			cp, err := s.GetCheckpoint(n)
			if err != nil || string(cp) != n {
				t.Fatalf("GetCheckpoint = %q, %v", cp, err)
			}
			offs, err := s.FetchOffsets(n)
			if err != nil {
				t.Fatal(err)
			}
			want := map[TopicPartition]CommittedOffset{
				{Topic: n, Partition: 0}:   {Offset: int64(i)},
				{Topic: "x", Partition: 1}: {Offset: int64(100 + i)},
			}
			if !reflect.DeepEqual(offs, want) {
				t.Fatalf("FetchOffsets = %+v, want %+v", offs, want)
			}
		})
	}
	t.Run("list offset groups", func(t *testing.T) {
		got, err := s.ListOffsetGroups()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"", "a", "a\x00", "a\x00b", "a.b", "ab", "x"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ListOffsetGroups = %q, want %q", got, want)
		}
	})
	t.Run("delete group a leaves a.b and a\\x00", func(t *testing.T) {
		if err := s.DeleteGroup("a"); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a.b", "a\x00", "a\x00b", "ab"} {
			offs, err := s.FetchOffsets(n)
			if err != nil || len(offs) != 2 {
				t.Fatalf("FetchOffsets(%q) = %v, %v", n, offs, err)
			}
			if _, err := s.GetGroup(n); err != nil {
				t.Fatalf("GetGroup(%q): %v", n, err)
			}
		}
		if _, err := s.GetTopic("a"); err != nil {
			t.Fatalf("topic a went with group a: %v", err)
		}
	})
}

func TestOffsets(t *testing.T) {
	s := openTest(t, t.TempDir())
	full := CommittedOffset{Offset: 42, LeaderEpoch: 7, Metadata: "meta", CommitTime: ms, ExpireTime: ms.Add(time.Hour)}
	cases := []struct {
		name string
		tp   TopicPartition
		o    CommittedOffset
	}{
		{"full", TopicPartition{"t", 0}, full},
		{"unknown epoch", TopicPartition{"t", 1}, CommittedOffset{Offset: 0, LeaderEpoch: -1}},
		{"negative offset", TopicPartition{"t", 2}, CommittedOffset{Offset: -1, LeaderEpoch: -1}},
		{"big partition", TopicPartition{"u", 1 << 30}, CommittedOffset{Offset: 1 << 62, Metadata: string(make([]byte, 5000))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.CommitOffsets("g", map[TopicPartition]CommittedOffset{tc.tp: tc.o}); err != nil {
				t.Fatal(err)
			}
			got, err := s.FetchOffsets("g")
			if err != nil {
				t.Fatal(err)
			}
			assertOffset(t, got[tc.tp], tc.o)
		})
	}
	t.Run("fetch all", func(t *testing.T) {
		got, _ := s.FetchOffsets("g")
		if len(got) != len(cases) {
			t.Fatalf("%d offsets, want %d", len(got), len(cases))
		}
	})
	t.Run("unknown group is empty", func(t *testing.T) {
		got, err := s.FetchOffsets("nobody")
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("FetchOffsets(nobody) = %v, %v", got, err)
		}
	})
	t.Run("delete some", func(t *testing.T) {
		if err := s.DeleteOffsets("g", []TopicPartition{{"t", 0}, {"t", 1}, {"missing", 9}}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.FetchOffsets("g")
		if len(got) != 2 {
			t.Fatalf("after delete: %v", got)
		}
		if _, ok := got[TopicPartition{"t", 2}]; !ok {
			t.Fatal("t-2 deleted too")
		}
	})
	t.Run("empty commit is a no-op", func(t *testing.T) {
		if err := s.CommitOffsets("h", nil); err != nil {
			t.Fatal(err)
		}
		groups, _ := s.ListOffsetGroups()
		if !reflect.DeepEqual(groups, []string{"g"}) {
			t.Fatalf("groups = %q", groups)
		}
	})
}

func assertOffset(t *testing.T, got, want CommittedOffset) {
	t.Helper()
	if !got.CommitTime.Equal(want.CommitTime) || !got.ExpireTime.Equal(want.ExpireTime) {
		t.Fatalf("times = %v/%v, want %v/%v", got.CommitTime, got.ExpireTime, want.CommitTime, want.ExpireTime)
	}
	got.CommitTime, got.ExpireTime, want.CommitTime, want.ExpireTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Fatalf("offset = %+v, want %+v", got, want)
	}
}

func testGroup(name string) Group {
	return Group{
		Name: name, State: "Stable", ProtocolType: "consumer", Protocol: "range",
		Generation: 3, Leader: "m1", StateTime: ms,
		Members: []GroupMember{
			{
				MemberID: "m1", GroupInstanceID: "inst-1", ClientID: "c", ClientHost: "/127.0.0.1",
				RebalanceTimeout: time.Minute, SessionTimeout: 45 * time.Second, ProtocolType: "consumer",
				Protocols:  []GroupProtocol{{Name: "range", Metadata: []byte{0, 1, 2}}, {Name: "roundrobin"}},
				Assignment: []byte{9, 9},
			},
			{MemberID: "m2", Protocols: []GroupProtocol{{Name: "range", Metadata: []byte{3}}}},
		},
	}
}

func TestGroups(t *testing.T) {
	s := openTest(t, t.TempDir())
	cases := []struct {
		name string
		g    Group
	}{
		{"stable", testGroup("g1")},
		{"empty", Group{Name: "g0", State: "Empty", StateTime: ms}},
		{"no time", Group{Name: "g2", State: "Dead"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.PutGroup(tc.g); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetGroup(tc.g.Name)
			if err != nil {
				t.Fatal(err)
			}
			assertGroup(t, got, tc.g)
		})
	}
	t.Run("list", func(t *testing.T) {
		gs, err := s.ListGroups()
		if err != nil || len(gs) != 3 || gs[0].Name != "g0" || gs[2].Name != "g2" {
			t.Fatalf("ListGroups = %+v, %v", gs, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := s.GetGroup("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("GetGroup(nope) = %v", err)
		}
		if err := s.DeleteGroup("nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("DeleteGroup(nope) = %v", err)
		}
	})
}

func assertGroup(t *testing.T, got, want Group) {
	t.Helper()
	if !got.StateTime.Equal(want.StateTime) {
		t.Fatalf("StateTime = %v, want %v", got.StateTime, want.StateTime)
	}
	got.StateTime, want.StateTime = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestDeleteGroupRemovesOffsets(t *testing.T) {
	s := openTest(t, t.TempDir())
	cases := []struct {
		name      string
		withState bool
	}{
		{"state and offsets", true},
		{"offsets only", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := "grp-" + tc.name
			if tc.withState {
				if err := s.PutGroup(testGroup(g)); err != nil {
					t.Fatal(err)
				}
			}
			offs := map[TopicPartition]CommittedOffset{}
			for p := int32(0); p < 10; p++ {
				offs[TopicPartition{"t", p}] = CommittedOffset{Offset: int64(p)}
			}
			if err := s.CommitOffsets(g, offs); err != nil {
				t.Fatal(err)
			}
			if err := s.CommitOffsets(g+"x", offs); err != nil { // a neighbour that must survive
				t.Fatal(err)
			}
			if err := s.DeleteGroup(g); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetGroup(g); !errors.Is(err, ErrNotFound) {
				t.Fatalf("GetGroup after delete: %v", err)
			}
			if got, err := s.FetchOffsets(g); err != nil || len(got) != 0 {
				t.Fatalf("FetchOffsets after delete = %v, %v", got, err)
			}
			if got, _ := s.FetchOffsets(g + "x"); len(got) != 10 {
				t.Fatalf("neighbour lost offsets: %d left", len(got))
			}
			groups, _ := s.ListOffsetGroups()
			for _, name := range groups {
				if name == g {
					t.Fatalf("ListOffsetGroups still lists %q", g)
				}
			}
		})
	}
}

func TestCheckpoints(t *testing.T) {
	s := openTest(t, t.TempDir())
	cases := []struct {
		name  string
		value []byte
	}{
		{"hw", []byte{1, 2, 3}},
		{"empty", []byte{}},
		{"big", make([]byte, 1<<20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.PutCheckpoint(tc.name, tc.value); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetCheckpoint(tc.name)
			if err != nil || got == nil || string(got) != string(tc.value) {
				t.Fatalf("GetCheckpoint = %d bytes, %v", len(got), err)
			}
		})
	}
	if _, err := s.GetCheckpoint("none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetCheckpoint(none) = %v", err)
	}
}

func TestProducerIDs(t *testing.T) {
	dir := t.TempDir()
	var last int64 = -1
	for round := 0; round < 3; round++ {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{1, 1000, 7} {
			start, err := s.AllocateProducerIDs(n)
			if err != nil {
				t.Fatal(err)
			}
			if start <= last {
				t.Fatalf("round %d: block starts at %d, not after %d", round, start, last)
			}
			last = start + n - 1
		}
		if _, err := s.AllocateProducerIDs(0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("AllocateProducerIDs(0) = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if last != 3*1008-1 {
		t.Fatalf("last id %d: blocks are not contiguous", last)
	}
}

func TestProducerIDsConcurrent(t *testing.T) {
	s := openTest(t, t.TempDir())
	const workers, per = 4, 20
	starts := make(chan int64, workers*per)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				start, err := s.AllocateProducerIDs(10)
				if err != nil {
					t.Error(err)
					return
				}
				starts <- start
			}
		}()
	}
	wg.Wait()
	close(starts)
	seen := map[int64]bool{}
	for st := range starts {
		if st%10 != 0 || seen[st] {
			t.Fatalf("overlapping block at %d", st)
		}
		seen[st] = true
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	topic := Topic{Name: "t", ID: [16]byte{0xab}, Partitions: 2, ReplicationFactor: 1, Assignment: [][]int32{{0}, {0}}, Configs: map[string]string{"retention.ms": "5"}, CreatedAt: ms}
	off := CommittedOffset{Offset: 9, LeaderEpoch: 2, Metadata: "m", CommitTime: ms}
	steps := []error{
		s.PutTopic(topic),
		s.PutGroup(testGroup("g")),
		s.CommitOffsets("g", map[TopicPartition]CommittedOffset{{"t", 1}: off}),
		s.PutCheckpoint("hw", []byte("x")),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	pid, _ := s.AllocateProducerIDs(5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, dir)
	t.Run("topic", func(t *testing.T) {
		got, err := s.GetTopic("t")
		if err != nil || got.ID != topic.ID || got.Configs["retention.ms"] != "5" || !got.CreatedAt.Equal(ms) {
			t.Fatalf("GetTopic = %+v, %v", got, err)
		}
	})
	t.Run("group", func(t *testing.T) {
		got, err := s.GetGroup("g")
		if err != nil {
			t.Fatal(err)
		}
		assertGroup(t, got, testGroup("g"))
	})
	t.Run("offsets", func(t *testing.T) {
		got, err := s.FetchOffsets("g")
		if err != nil {
			t.Fatal(err)
		}
		assertOffset(t, got[TopicPartition{"t", 1}], off)
	})
	t.Run("checkpoint", func(t *testing.T) {
		got, err := s.GetCheckpoint("hw")
		if err != nil || string(got) != "x" {
			t.Fatalf("GetCheckpoint = %q, %v", got, err)
		}
	})
	t.Run("producer ids", func(t *testing.T) {
		next, err := s.AllocateProducerIDs(1)
		if err != nil || next != pid+5 {
			t.Fatalf("AllocateProducerIDs after reopen = %d, %v; want %d", next, err, pid+5)
		}
	})
}

func TestClose(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	calls := map[string]func() error{
		"PutTopic":            func() error { return s.PutTopic(Topic{Name: "t"}) },
		"GetTopic":            func() error { _, err := s.GetTopic("t"); return err },
		"ListTopics":          func() error { _, err := s.ListTopics(); return err },
		"DeleteTopic":         func() error { return s.DeleteTopic("t") },
		"AllocateProducerIDs": func() error { _, err := s.AllocateProducerIDs(1); return err },
		"CommitOffsets": func() error {
			return s.CommitOffsets("g", map[TopicPartition]CommittedOffset{{"t", 0}: {}})
		},
		"FetchOffsets":     func() error { _, err := s.FetchOffsets("g"); return err },
		"DeleteOffsets":    func() error { return s.DeleteOffsets("g", []TopicPartition{{"t", 0}}) },
		"ListOffsetGroups": func() error { _, err := s.ListOffsetGroups(); return err },
		"PutGroup":         func() error { return s.PutGroup(Group{Name: "g"}) },
		"GetGroup":         func() error { _, err := s.GetGroup("g"); return err },
		"ListGroups":       func() error { _, err := s.ListGroups(); return err },
		"DeleteGroup":      func() error { return s.DeleteGroup("g") },
		"PutCheckpoint":    func() error { return s.PutCheckpoint("c", nil) },
		"GetCheckpoint":    func() error { _, err := s.GetCheckpoint("c"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, ErrClosed) {
				t.Fatalf("%s after Close = %v, want ErrClosed", name, err)
			}
		})
	}
}

// TestConcurrentCommits runs commits, fetches and group deletes from many
// goroutines (meant for -race) and checks each group ends with its last commit.
func TestConcurrentCommits(t *testing.T) {
	s := openTest(t, t.TempDir())
	const workers, rounds, parts = 4, 25, 8
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			group := fmt.Sprintf("g%d", w)
			for r := 0; r < rounds; r++ {
				offs := make(map[TopicPartition]CommittedOffset, parts)
				for p := int32(0); p < parts; p++ {
					offs[TopicPartition{"shared", p}] = CommittedOffset{Offset: int64(r), LeaderEpoch: -1}
				}
				if err := s.CommitOffsets(group, offs); err != nil {
					t.Error(err)
					return
				}
				got, err := s.FetchOffsets(group)
				if err != nil {
					t.Error(err)
					return
				}
				// Commits are atomic: every partition shows this round.
				for tp, o := range got {
					if o.Offset != int64(r) {
						t.Errorf("%s %v: offset %d in round %d", group, tp, o.Offset, r)
						return
					}
				}
				if _, err := s.ListOffsetGroups(); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	groups, err := s.ListOffsetGroups()
	if err != nil || len(groups) != workers {
		t.Fatalf("ListOffsetGroups = %q, %v", groups, err)
	}
	for _, g := range groups {
		got, _ := s.FetchOffsets(g)
		if len(got) != parts {
			t.Fatalf("%s has %d offsets", g, len(got))
		}
	}
}

// TestCloseRacesCalls closes the store while calls are in flight: each call
// either succeeds or returns ErrClosed, and nothing panics.
func TestCloseRacesCalls(t *testing.T) {
	s := openTest(t, t.TempDir())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				err := s.CommitOffsets("g", map[TopicPartition]CommittedOffset{{"t", int32(i)}: {Offset: 1}})
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
