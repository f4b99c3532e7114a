package engine

// Future logs (JBOD, several log dirs): a replica being moved to another
// log dir by AlterReplicaLogDirs is copied into a "future" log in the
// target dir's store first, named as Kafka names its directory,
// "<topic>-<partition>.<uuid>-future", and renamed to "<topic>-<partition>"
// once it has caught up and replaced the current log (Kafka's
// LogManager.replaceCurrentWithFutureLog). A store names a future log by
// FutureLogID: the Topic is the whole directory name and the Partition is
// FuturePartition, so that a backend that lays logs out as
// "<Topic>-<Partition>" directories maps it to Kafka's name instead.

import (
	"math"
	"strconv"
	"strings"
)

// FuturePartition is the Partition of a future log's PartitionID.
const FuturePartition int32 = math.MaxInt32

// futureSuffix ends a future log's directory name (Kafka's
// UnifiedLog.FutureDirSuffix). Part of the on-disk format: do not change.
const futureSuffix = "-future"

// FutureLogID returns the id of a future log of id; uuid is a hex string
// without dashes (Kafka's Uuid in its directory names).
func FutureLogID(id PartitionID, uuid string) PartitionID {
	return PartitionID{Topic: id.Topic + "-" + strconv.Itoa(int(id.Partition)) + "." + uuid + futureSuffix, Partition: FuturePartition}
}

// ParseFutureLogID returns the partition a future log's id belongs to and
// its uuid; ok is false for any other id.
func ParseFutureLogID(f PartitionID) (id PartitionID, uuid string, ok bool) {
	if f.Partition != FuturePartition {
		return PartitionID{}, "", false
	}
	return ParseFutureDirName(f.Topic)
}

// ParseFutureDirName splits "<topic>-<partition>.<uuid>-future"; ok is
// false for anything else.
func ParseFutureDirName(name string) (id PartitionID, uuid string, ok bool) {
	rest, found := strings.CutSuffix(name, futureSuffix)
	if !found {
		return PartitionID{}, "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot <= 0 || dot == len(rest)-1 {
		return PartitionID{}, "", false
	}
	tp, uuid := rest[:dot], rest[dot+1:]
	dash := strings.LastIndexByte(tp, '-')
	if dash <= 0 {
		return PartitionID{}, "", false
	}
	p, err := strconv.ParseInt(tp[dash+1:], 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != tp[dash+1:] {
		return PartitionID{}, "", false
	}
	return PartitionID{Topic: tp[:dash], Partition: int32(p)}, uuid, true
}

// LogRenamer is an optional capability of a Store, found by type
// assertion: the replica manager needs it to move a replica between log
// dirs (it renames the caught-up future log to the partition's name).
type LogRenamer interface {
	// RenameLog gives the log named from, which must not be open, the
	// name to, which must not exist (ErrLogExists), with its data and
	// checkpointed offsets; ErrNoLog when from does not exist. The new
	// name is durable when it returns; a crash before leaves one of the
	// two names.
	RenameLog(from, to PartitionID) error
}
