// Package tiering moves sealed segments of partition logs to the object
// store and reads them back (DESIGN.md §7): the manifest of each partition
// (manifest.go), the uploader (upload.go), remote retention (retention.go)
// and the remote reader (remote.go). It knows partition logs through
// agent/log and the bucket through tiering/objstore; the agent wires them.
package tiering
