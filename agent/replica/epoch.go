package replica

// OffsetForLeaderEpoch answers a follower's (or consumer's)
// OffsetForLeaderEpoch on the leader: the epoch fence on
// currentLeaderEpoch, then the end of the largest epoch at or below epoch
// in this leader's log.
//
// Kafka writes the new epoch and its start offset into the leader's epoch
// cache when it takes over, before any append; agent/log records an epoch
// only with its first batch. Until then this answers as Kafka would: the
// current epoch ends at the log end, and an epoch between the log's latest
// and the current one ends at the epoch start. That matters after quick
// successive elections, when a follower holds records of an epoch this
// leader never saw: the answer must still place them, else the follower
// would fall back to truncating to its HW.
func (m *Machine) OffsetForLeaderEpoch(currentLeaderEpoch, epoch int32, log EpochLog) (EpochEndOffset, error) {
	if err := m.CheckEpoch(currentLeaderEpoch, true); err != nil {
		return undefinedEpochEnd, err
	}
	found, end := log.EndOffsetForEpoch(epoch)
	if found != UndefinedEpoch || epoch < 0 || epoch > m.state.LeaderEpoch {
		return EpochEndOffset{Epoch: found, EndOffset: end}, nil
	}
	switch latest := log.LatestEpoch(); {
	case latest >= m.state.LeaderEpoch:
		// The first append of this epoch landed between the two reads;
		// the log knows the answer now.
		found, end = log.EndOffsetForEpoch(epoch)
		return EpochEndOffset{Epoch: found, EndOffset: end}, nil
	case epoch == m.state.LeaderEpoch:
		return EpochEndOffset{Epoch: epoch, EndOffset: log.LogEndOffset()}, nil
	case latest < 0:
		// No epoch below the requested one: Kafka names the requested
		// epoch itself, ending where the next known epoch starts.
		return EpochEndOffset{Epoch: epoch, EndOffset: m.epochStart}, nil
	default:
		return EpochEndOffset{Epoch: latest, EndOffset: m.epochStart}, nil
	}
}
