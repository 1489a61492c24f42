package diskless

import (
	"encoding/binary"
	"hash/fnv"
)

// Pick is the agent Metadata names as the leader of diskless partition
// (topicID, partition) among candidates (the live agents of the client's
// rack, or all of them): rendezvous hashing, so partitions spread evenly
// over the candidates and an agent coming or going moves only its own
// share. Every agent computes the same pick from the same candidates;
// -1 when there are none.
func Pick(topicID [16]byte, partition int32, candidates []int32) int32 {
	best, bestScore := int32(-1), uint64(0)
	for _, a := range candidates {
		h := fnv.New64a()
		h.Write(topicID[:])
		var b [8]byte
		binary.BigEndian.PutUint32(b[:4], uint32(partition))
		binary.BigEndian.PutUint32(b[4:], uint32(a))
		h.Write(b[:])
		// FNV's low bits mix poorly for inputs differing in the last
		// bytes; a final avalanche (SplitMix64's) spreads them.
		s := mix(h.Sum64())
		if best < 0 || s > bestScore || s == bestScore && a < best {
			best, bestScore = a, s
		}
	}
	return best
}

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
