package main

// `strata consume TOPIC` reads partitions directly, with no consumer group
// and no committed offsets, and prints each record with --format.
//
// Start-up (bounded by --timeout): Metadata for the partition list, then
// ListOffsets for the log start, the high watermark and, for a time spec,
// the offset at that time. Every partition's start is thereby a concrete
// offset, and its end is the high watermark seen at start-up.
//
// Without --follow the command stops once every partition has reached that
// end, so it prints a snapshot and exits even while producers keep writing;
// records at or past the end are not printed. Control records (transaction
// markers) are requested from the client only to see the position move past
// them: a partition whose last batch is a marker would otherwise never look
// finished. With --follow it runs until SIGINT/SIGTERM or --count records.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	errNoSuchPartition = errors.New("consume: no such partition")
	errBadCount        = errors.New("consume: --count must not be negative")
)

// fetchSource is the part of *kgo.Client the consume loop uses.
type fetchSource interface {
	PollFetches(ctx context.Context) kgo.Fetches
}

var _ fetchSource = (*kgo.Client)(nil)

type consumeFlags struct {
	from      string
	partition int32
	count     int64
	follow    bool
	format    string
}

func newConsumeCmd() *cobra.Command {
	var (
		cf clientFlags
		fl consumeFlags
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of TOPIC without a consumer group (works against any Kafka)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, &cf, &fl, args[0])
		},
	}
	cf.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&fl.from, "from", "earliest", "Where to start in every partition: earliest, latest, an offset, @<unix-ms> or an RFC3339 time such as 2026-01-02T15:04:05Z.")
	f.Int32Var(&fl.partition, "partition", -1, "Read only this partition; -1 reads all of them.")
	f.Int64VarP(&fl.count, "count", "n", 0, "Stop after this many records; 0 means no limit.")
	f.BoolVar(&fl.follow, "follow", false, "Keep waiting for new records instead of stopping at the end offsets seen at start.")
	f.StringVar(&fl.format, "format", "", `Output template: %t topic, %p partition, %o offset, %k key, %v value, %T timestamp (ms), %h headers, %% a '%', with \t \n \\ \xHH escapes; empty prints "key<TAB>value" (or just the value when there is no key) and a newline.`)
	return cmd
}

// partitionPlan is where consumption of one partition starts and, without
// --follow, where it ends (exclusive).
type partitionPlan struct {
	partition  int32
	start, end int64
}

func runConsume(cmd *cobra.Command, cf *clientFlags, fl *consumeFlags, topic string) error {
	spec, err := parseOffsetSpec(fl.from)
	if err != nil {
		return err
	}
	format, err := parseFormat(fl.format)
	if err != nil {
		return err
	}
	if fl.count < 0 {
		return fmt.Errorf("%w (got %d)", errBadCount, fl.count)
	}
	plans, err := planFromCluster(cmd.Context(), cf, topic, fl.partition, spec)
	if err != nil {
		return err
	}
	offsets := make(map[int32]kgo.Offset, len(plans))
	for _, p := range plans {
		offsets[p.partition] = kgo.NewOffset().At(p.start)
	}
	cl, err := cf.newKafkaClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = consumeLoop(ctx, cl, cmd.OutOrStdout(), topic, plans, format, fl.count, fl.follow)
	return err
}

// planFromCluster asks the cluster where each partition starts and ends.
func planFromCluster(ctx context.Context, cf *clientFlags, topic string, partition int32, spec offsetSpec) ([]partitionPlan, error) {
	adm, err := cf.newAdmin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()

	topics, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return nil, newBrokerError("consume: metadata of", topic, err, "")
	}
	td, ok := topics[topic]
	if !ok {
		return nil, fmt.Errorf("consume: topic %s: not in the broker's response", topic)
	}
	if td.Err != nil {
		return nil, newBrokerError("consume: topic", topic, td.Err, "")
	}
	var parts []int32
	for _, p := range td.Partitions.Sorted() {
		if partition < 0 || p.Partition == partition {
			parts = append(parts, p.Partition)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: %s/%d (the topic has %d)", errNoSuchPartition, topic, partition, len(td.Partitions))
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, newBrokerError("consume: list start offsets of", topic, err, "")
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, newBrokerError("consume: list end offsets of", topic, err, "")
	}
	var atTime kadm.ListedOffsets
	if spec.kind == offsetTime {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, spec.millis, topic); err != nil {
			return nil, newBrokerError("consume: list offsets by time of", topic, err, "")
		}
	}
	return makePlans(topic, parts, spec, starts, ends, atTime)
}

// makePlans joins the ListOffsets answers into one plan per partition.
func makePlans(topic string, parts []int32, spec offsetSpec, starts, ends, atTime kadm.ListedOffsets) ([]partitionPlan, error) {
	lookup := func(l kadm.ListedOffsets, what string, p int32) (int64, error) {
		o, ok := l.Lookup(topic, p)
		if !ok {
			return 0, fmt.Errorf("consume: %s offset of %s/%d: not in the broker's response", what, topic, p)
		}
		if o.Err != nil {
			return 0, newBrokerError("consume: "+what+" offset of", fmt.Sprintf("%s/%d", topic, p), o.Err, "")
		}
		return o.Offset, nil
	}
	plans := make([]partitionPlan, 0, len(parts))
	for _, p := range parts {
		start, err := lookup(starts, "start", p)
		if err != nil {
			return nil, err
		}
		end, err := lookup(ends, "end", p)
		if err != nil {
			return nil, err
		}
		at := int64(-1)
		if spec.kind == offsetTime {
			if at, err = lookup(atTime, "time", p); err != nil {
				return nil, err
			}
		}
		plans = append(plans, partitionPlan{partition: p, start: resolveStart(spec, start, end, at), end: end})
	}
	return plans, nil
}

// consumeLoop polls src and writes records to w until, without follow,
// every plan reached its end, or count records were written (count > 0), or
// ctx ends (which is a normal stop, not an error). It returns how many
// records it wrote. Output is flushed after every poll so --follow is live.
func consumeLoop(ctx context.Context, src fetchSource, w io.Writer, topic string, plans []partitionPlan,
	format recordFormat, count int64, follow bool) (int64, error) {
	remaining := make(map[int32]int64, len(plans)) // partition -> end; only without follow
	if !follow {
		for _, p := range plans {
			if p.start < p.end {
				remaining[p.partition] = p.end
			}
		}
	}
	bw := bufio.NewWriter(w)
	var written int64
	var buf []byte
	for follow || len(remaining) > 0 {
		fetches := src.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if fetchErr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				fetchErr = newBrokerError("consume", fmt.Sprintf("%s/%d", t, p), err, "")
			}
		})
		if fetchErr != nil {
			_ = bw.Flush()
			return written, fetchErr
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if !follow {
				end, ok := remaining[r.Partition]
				if !ok || r.Offset >= end {
					delete(remaining, r.Partition)
					continue
				}
				if r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
			}
			if r.Attrs.IsControl() {
				continue
			}
			buf = format.appendRecord(buf[:0], r)
			if _, err := bw.Write(buf); err != nil {
				return written, fmt.Errorf("consume: write output: %w", err)
			}
			written++
			if count > 0 && written >= count {
				return written, flushOutput(bw)
			}
		}
		if err := flushOutput(bw); err != nil {
			return written, err
		}
	}
	return written, flushOutput(bw)
}

func flushOutput(bw *bufio.Writer) error {
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("consume: write output: %w", err)
	}
	return nil
}
