// Package fdlimit reads the process's limit on open file descriptors and
// sizes what an agent may keep open within it.
//
// Go raises the soft RLIMIT_NOFILE to the hard limit when a program starts
// on Linux (and restores the old value for the programs it runs), so the
// soft limit read here is the one the agent really has.
package fdlimit

// Reserve is the descriptors kept aside for everything other than Kafka
// connections and segment files: the listeners, HTTP connections, gossip,
// the store's files and the state files a partition writes and closes.
const Reserve = 256

// Floor is the fewest segment files an automatic bound allows, however
// small the limit.
const Floor = 16

// LogFiles is the automatic bound on open segment files for a descriptor
// limit and --max-connections: what is left of the limit after the
// connections and Reserve, but never less than a quarter of the limit
// (an agent whose connections could take every descriptor still needs
// its files) nor less than Floor.
func LogFiles(limit uint64, maxConnections int) int {
	quarter := limit / 4
	n := quarter
	if used := uint64(max(maxConnections, 0)) + Reserve; limit > used && limit-used > quarter {
		n = limit - used
	}
	return int(max(min(n, 1<<30), Floor))
}

// Needed is the descriptors an agent may use at once with these bounds.
func Needed(maxConnections, logFiles int) uint64 {
	return uint64(max(maxConnections, 0)) + uint64(max(logFiles, 0)) + Reserve
}
