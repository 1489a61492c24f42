// Package metadata keeps Strata's cluster metadata as JSON objects in the
// store (docs/design.md §5 "Store layout", "CAS") and owns the table of topic
// configurations Strata acts on.
//
// # Objects
//
// Every object is a JSON document with "version": 1. Readers accept version 1,
// reject a missing version as corrupt and a newer one with a VersionError, so
// an old agent never acts on metadata it does not understand.
//
//	cluster.json                      cluster id, format version            create-once
//	agents/<id>.json                  registration of an agent id           create-once
//	producer-ids.json                 next free producer id                 CAS
//	topics/names/<topic>.json         name -> topic id                      create-once
//	topics/<topic-id>/topic.json      partitions, configs                   CAS
//	topics/<topic-id>/<p>/state.json  leader, epoch, replicas, ISR          CAS
//	                                  (none for a diskless topic)
//	users/<user>.json                 SCRAM credentials of a user (users.go) CAS
//	loads/<id>.json                   an agent's replicas' load (loads.go)  overwritten
//
// <topic-id> is the 16-byte Kafka topic UUID written as 32 lowercase hex
// digits without dashes (FormatTopicID). It is random and never the zero UUID
// or Kafka's reserved 0...01, so a deleted and re-created topic gets a fresh
// directory and no object of the old incarnation can be mistaken for the new.
//
// # Creating and deleting topics without half-states
//
// The name object is the commit point of a topic: a topic exists exactly when
// topics/names/<topic>.json exists and the topic.json it points to exists.
// CreateTopic therefore writes in this order:
//
//  1. Read the name object; if it names a live topic, fail with ErrTopicExists
//     before writing anything.
//  2. topics/<id>/topic.json and every topics/<id>/<p>/state.json, under a
//     fresh random id nobody else knows, so these writes cannot conflict.
//  3. The name object, create-once. Losing this race means another creator
//     committed first: CreateTopic deletes its own objects and returns
//     ErrTopicExists.
//
// A crash before step 3 leaves only an unnamed topics/<id>/ tree that no
// reader ever reaches (readers start from names); CleanOrphans deletes such
// trees once every object in them is older than Settings.OrphanGrace, which
// also keeps it away from a create that is still in progress.
//
// DeleteTopic removes the name object first, so the topic vanishes at once,
// then the topic's objects with topic.json last. A crash part-way leaves an
// unnamed tree: the same orphan as above, collected the same way.
//
// A name whose topic.json is missing ("dangling") cannot be produced by this
// package's own steps except if CleanOrphans outruns a creator stalled for
// longer than the grace period; it may also come from outside damage. Readers
// treat a dangling name as absent (Topic returns ErrUnknownTopic, Topics skips
// it with a warning), and CreateTopic replaces it with If-Match on the
// dangling object's ETag, so two creators repairing the same name cannot both
// win.
//
// A diskless topic (diskless.enable=true, diskless.go) has topic.json and
// its name only: its partitions have no state.json, and CreateTopic and
// AddPartitions write none. Whether a topic is diskless is fixed at
// creation; UpdateTopic refuses to change it.
//
// AddPartitions follows the same rule: the new state.json objects are written
// first and the topic.json CAS that raises the partition count commits them.
// state.json objects at indexes >= the committed count are leftovers that no
// agent acts on; a later AddPartitions overwrites them.
//
// # Concurrency
//
// A Store holds no mutable state of its own; all methods are safe for
// concurrent use, and because every change is a conditional write, also
// across processes and agents sharing one bucket. CAS loops retry at most
// Settings.CASRetries times with jittered exponential backoff and then fail
// with ErrConflict.
package metadata
