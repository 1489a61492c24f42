package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Small state files (leader-epoch-checkpoint, log-start-offset-checkpoint,
// producer-state/*.snap) share one framing, written atomically with
// vfs.WriteFileAtomic:
//
//	offset  size  field
//	     0     4  magic, one per file kind
//	     4     2  version (1)
//	     6     n  payload
//	   6+n     4  CRC-32C (Castagnoli) of bytes 0..6+n
//
// A file that fails the framing check is treated as absent and logged; the
// state it held is rebuilt from the segments where that is possible.

const (
	fileVersion     = 1
	frameOverhead   = 10
	maxStateFile    = 64 << 20 // bound for reading any state file
	epochFileName   = "leader-epoch-checkpoint"
	startFileName   = "log-start-offset-checkpoint"
	cleanFileName   = "clean-shutdown"
	producerDirName = "producer-state"
	snapSuffix      = ".snap"
)

var (
	magicEpoch    = [4]byte{'S', 'L', 'E', 'P'}
	magicStart    = [4]byte{'S', 'L', 'S', 'O'}
	magicProducer = [4]byte{'S', 'L', 'P', 'T'} // with transactions
	// magicProducerV1 is a producer snapshot from before transactions.
	magicProducerV1 = [4]byte{'S', 'L', 'P', 'S'}
	magicClean      = [4]byte{'S', 'L', 'C', 'S'}
)

var errBadStateFile = errors.New("log: bad state file")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func encodeFrame(magic [4]byte, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+frameOverhead)
	b = append(b, magic[:]...)
	b = binary.BigEndian.AppendUint16(b, fileVersion)
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeFrame(magic [4]byte, b []byte) ([]byte, error) {
	if len(b) < frameOverhead {
		return nil, fmt.Errorf("%w: %d bytes", errBadStateFile, len(b))
	}
	if [4]byte(b[:4]) != magic {
		return nil, fmt.Errorf("%w: magic %q", errBadStateFile, b[:4])
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != fileVersion {
		return nil, fmt.Errorf("%w: version %d", errBadStateFile, v)
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, crcTable), binary.BigEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, fmt.Errorf("%w: crc %08x, want %08x", errBadStateFile, got, want)
	}
	return body[6:], nil
}
