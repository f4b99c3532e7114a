// Package coordlog is the machinery shared by coordinators whose state is a
// materialized view of a partition of an internal, replicated topic:
// __consumer_offsets (package offsets, under the group coordinator) and
// __transaction_state (package txn), on a single node as in a cluster. It
// follows Kafka's coordinator-common runtime (CoordinatorRuntime,
// CoordinatorLoader): one loader, one replay loop, several state machines.
//
//   - PartitionFor places a group or transactional id on a partition.
//   - Errors every coordinator answers with (ErrNotCoordinator,
//     ErrLoadInProgress, ErrCoordinatorNotAvailable) are declared here;
//     package internal/errcode gives their Kafka codes.
//   - Partitions tracks which partitions of the topic this broker leads and
//     whether each is loaded. Becoming leader starts a load (retried with a
//     backoff until it succeeds, leadership moves on, or Close); losing
//     leadership unloads at once. Each transition takes a new generation,
//     so a load that lost its leadership while it ran never marks the
//     partition loaded. Loads run one at a time, and a load installs its
//     state only while its generation is current, so the state of a later
//     leadership is never overwritten by that of an earlier one.
//   - Replay reads a partition from its log start to a given end and hands
//     each record of every non-control batch to the state machine. A load
//     reports what its replay read and a summary of the state it built
//     (Loaded), logged with the time it took: "coordlog: loaded partition".
//   - Append writes a coordinator's records with acks=all and returns once
//     the in-sync replicas have them: state is applied only after that.
//
// What a record means, and where the replayed state goes, is the state
// machine's business; this package never decodes a key or a value.
package coordlog
