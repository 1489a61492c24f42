package batchcoord

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sampleRun() Run {
	return Run{
		ObjectID: [16]byte{1, 2, 3}, Epoch: 7, CommitMs: 1_765_000_000_000,
		Batches: []StoredBatch{
			{OffsetDelta: 0, LastOffsetDelta: 9, Position: 0, Size: 1200, MaxTimestamp: 5, ProducerID: 42, ProducerEpoch: 1, BaseSequence: 0, Attributes: 0x10},
			{OffsetDelta: 10, LastOffsetDelta: 0, Position: 1200, Size: 80, MaxTimestamp: 6, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			{OffsetDelta: 11, Size: 78, ProducerID: 42, ProducerEpoch: 1, Attributes: 0x30, Inline: []byte("control batch")},
			{OffsetDelta: 12, Size: 61, Inline: []byte{}},
		},
	}
}

func samplePartition() Partition {
	return Partition{LogStart: 100, CompactedEnd: 5000, Epochs: []EpochStart{{0, 0}, {3, 2500}}, Snapshot: []byte("producer state")}
}

func TestRecordsRoundTrip(t *testing.T) {
	rk := RunKey{PartitionKey{TopicID: [16]byte{9}, Partition: 3}, 4096}
	if got, err := DecodeRunKey(EncodeRunKey(rk)); err != nil || got != rk {
		t.Fatalf("run key: %+v, %v", got, err)
	}
	pk := PartitionKey{TopicID: [16]byte{8}, Partition: 1}
	if got, err := DecodePartitionKey(EncodePartitionKey(pk)); err != nil || got != pk {
		t.Fatalf("partition key: %+v, %v", got, err)
	}
	for key, want := range map[string]int16{string(EncodeRunKey(rk)): KeyRun, string(EncodePartitionKey(pk)): KeyPartition} {
		if got, err := KeyType([]byte(key)); err != nil || got != want {
			t.Fatalf("KeyType = %d, %v; want %d", got, err, want)
		}
	}
	if _, err := DecodeRunKey(EncodePartitionKey(pk)); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("a partition key read as a run key: %v", err)
	}

	run := sampleRun()
	v, err := EncodeRun(run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRun(v)
	if err != nil || !reflect.DeepEqual(got, run) {
		t.Fatalf("run:\n got %+v, %v\nwant %+v", got, err, run)
	}
	if got.Batches[1].Inline != nil || got.Batches[3].Inline == nil {
		t.Fatal("an absent inline batch and an empty one must stay apart")
	}
	part := samplePartition()
	pv, err := EncodePartition(part)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePartition(pv); err != nil || !reflect.DeepEqual(got, part) {
		t.Fatalf("partition:\n got %+v, %v\nwant %+v", got, err, part)
	}
	if _, err := EncodeRun(Run{}); err == nil {
		t.Fatal("a run of no batches encoded")
	}
}

// Every truncation and any trailing byte is refused, never read as a
// shorter record.
func TestRecordsRefuseBadBytes(t *testing.T) {
	rv, _ := EncodeRun(sampleRun())
	pv, _ := EncodePartition(samplePartition())
	rk := EncodeRunKey(RunKey{BaseOffset: 1})
	pk := EncodePartitionKey(PartitionKey{})
	decoders := map[string]struct {
		b      []byte
		decode func([]byte) error
	}{
		"run":           {rv, func(b []byte) error { _, err := DecodeRun(b); return err }},
		"partition":     {pv, func(b []byte) error { _, err := DecodePartition(b); return err }},
		"run key":       {rk, func(b []byte) error { _, err := DecodeRunKey(b); return err }},
		"partition key": {pk, func(b []byte) error { _, err := DecodePartitionKey(b); return err }},
	}
	for name, d := range decoders {
		for n := range len(d.b) {
			if err := d.decode(d.b[:n]); !errors.Is(err, ErrBadRecord) {
				t.Fatalf("%s cut to %d of %d bytes: %v", name, n, len(d.b), err)
			}
		}
		if err := d.decode(append(bytes.Clone(d.b), 0)); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%s with a trailing byte: %v", name, err)
		}
	}
	bad := bytes.Clone(rv)
	bad[1] = 1 // value version 1
	if _, err := DecodeRun(bad); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("unknown version: %v", err)
	}
}

// FuzzDecodeRun: any bytes are refused or decoded, never a panic, and
// what decodes encodes back to the same bytes.
func FuzzDecodeRun(f *testing.F) {
	rv, _ := EncodeRun(sampleRun())
	pv, _ := EncodePartition(samplePartition())
	f.Add(rv, false)
	f.Add(pv, true)
	f.Fuzz(func(t *testing.T, b []byte, partition bool) {
		var again []byte
		if partition {
			p, err := DecodePartition(b)
			if err != nil {
				return
			}
			again, err = EncodePartition(p)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			r, err := DecodeRun(b)
			if err != nil {
				return
			}
			again, err = EncodeRun(r)
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded record re-encodes differently")
		}
	})
}
