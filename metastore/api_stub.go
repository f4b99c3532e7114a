package metastore

import (
	"errors"
	"log/slog"
	"time"
)

var (
	ErrNotFound = errors.New("metastore: not found")
	ErrClosed   = errors.New("metastore: closed")
	ErrCorrupt  = errors.New("metastore: corrupt")
	errTODO     = errors.New("metastore: not implemented yet")
)

type Options struct {
	Logger *slog.Logger
}

type Store struct{}

func Open(dir string, opts Options) (*Store, error) { return &Store{}, nil }
func (s *Store) Close() error                        { return nil }

type Topic struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Assignment        [][]int32
	Configs           map[string]string
	CreatedAt         time.Time
}

func (s *Store) PutTopic(t Topic) error              { return errTODO }
func (s *Store) GetTopic(name string) (Topic, error) { return Topic{}, errTODO }
func (s *Store) ListTopics() ([]Topic, error)        { return nil, errTODO }
func (s *Store) DeleteTopic(name string) error       { return errTODO }

func (s *Store) AllocateProducerIDs(n int64) (int64, error) { return 0, errTODO }

type TopicPartition struct {
	Topic     string
	Partition int32
}

type CommittedOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitTime  time.Time
	ExpireTime  time.Time
}

func (s *Store) CommitOffsets(group string, offsets map[TopicPartition]CommittedOffset) error {
	return errTODO
}
func (s *Store) FetchOffsets(group string) (map[TopicPartition]CommittedOffset, error) {
	return nil, errTODO
}
func (s *Store) DeleteOffsets(group string, tps []TopicPartition) error { return errTODO }
func (s *Store) ListOffsetGroups() ([]string, error)                  { return nil, errTODO }

type GroupMember struct {
	MemberID                         string
	GroupInstanceID                  string
	ClientID, ClientHost             string
	RebalanceTimeout, SessionTimeout time.Duration
	ProtocolType                     string
	Protocols                        []GroupProtocol
	Assignment                       []byte
}

type GroupProtocol struct {
	Name     string
	Metadata []byte
}

type Group struct {
	Name         string
	State        string
	ProtocolType string
	Protocol     string
	Generation   int32
	Leader       string
	Members      []GroupMember
	StateTime    time.Time
}

func (s *Store) PutGroup(g Group) error              { return errTODO }
func (s *Store) GetGroup(name string) (Group, error) { return Group{}, errTODO }
func (s *Store) ListGroups() ([]Group, error)        { return nil, errTODO }
func (s *Store) DeleteGroup(name string) error       { return errTODO }

func (s *Store) PutCheckpoint(name string, value []byte) error { return errTODO }
func (s *Store) GetCheckpoint(name string) ([]byte, error)     { return nil, errTODO }
