package main

// `strata produce TOPIC` turns each line of stdin into one record. Records
// are handed to franz-go asynchronously, so a slow cluster applies
// backpressure through the client's buffer (it blocks Produce when full)
// rather than through memory growth here. At end of input the client is
// flushed, the count is printed on stderr, and the exit status is non-zero
// if any record failed or the input could not be read.
//
// The loop (produceLines) talks to a recordSink, not to *kgo.Client, so its
// counting and error handling are tested without a broker.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/compression"
)

// defaultMaxLineBytes bounds one input line (one record). It matches the
// broker default message.max.bytes of Kafka, so anything longer would be
// refused by a default-configured cluster anyway.
const defaultMaxLineBytes = 1 << 20

var (
	errProduceFailed  = errors.New("produce: records failed")
	errLineTooLong    = errors.New("produce: input line longer than --max-line-bytes")
	errBadAcks        = errors.New("produce: --acks must be all, 1 or 0")
	errBadCompression = errors.New("produce: --compression must be none, gzip, snappy, lz4 or zstd")
)

// recordSink is the part of *kgo.Client the produce loop uses. The promise
// may run on another goroutine; Flush returns once every record handed to
// Produce has been delivered or has failed.
type recordSink interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	Flush(ctx context.Context) error
}

var _ recordSink = (*kgo.Client)(nil)

type produceFlags struct {
	partition     int32
	keySeparator  string
	acks          string
	compression   string
	noIdempotence bool
	maxLineBytes  int
}

func newProduceCmd() *cobra.Command {
	var (
		cf clientFlags
		pf produceFlags
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Write each line of stdin to TOPIC as one record (works against any Kafka)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProduce(cmd, &cf, &pf, args[0])
		},
	}
	cf.register(cmd.Flags())
	f := cmd.Flags()
	f.Int32Var(&pf.partition, "partition", -1, "Write every record to this partition; -1 lets the key choose (hash), or spreads keyless records.")
	f.StringVar(&pf.keySeparator, "key-separator", `\t`, `Text before the first separator in a line is the record key; escapes \t \n \r \\ \xHH are understood; "" means lines have no key.`)
	f.StringVar(&pf.acks, "acks", "all", "Acknowledgements to wait for: all (every in-sync replica), 1 (the leader) or 0 (none). Anything but all turns idempotence off, as in Kafka's producer.")
	f.StringVar(&pf.compression, "compression", "none", "Batch compression codec: none, gzip, snappy, lz4 or zstd.")
	f.BoolVar(&pf.noIdempotence, "no-idempotence", false, "Do not use an idempotent producer id (retries may then write duplicates).")
	f.IntVar(&pf.maxLineBytes, "max-line-bytes", defaultMaxLineBytes, "Longest input line accepted; a longer line stops the command with an error.")
	return cmd
}

// producerOpts maps the produce flags onto franz-go options.
func (pf *produceFlags) producerOpts(cf *clientFlags) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.RecordDeliveryTimeout(cf.timeout)}
	idempotent := !pf.noIdempotence
	switch pf.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
		idempotent = false
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
		idempotent = false
	default:
		return nil, fmt.Errorf("%w (got %q)", errBadAcks, pf.acks)
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	codec, err := parseCompression(pf.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if pf.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	return opts, nil
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	if c, ok := compression.Parse(s); ok {
		return c, nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%w (got %q)", errBadCompression, s)
}

func runProduce(cmd *cobra.Command, cf *clientFlags, pf *produceFlags, topic string) error {
	sep, err := unescape(pf.keySeparator)
	if err != nil {
		return fmt.Errorf("produce: --key-separator: %w", err)
	}
	if pf.maxLineBytes <= 0 {
		return fmt.Errorf("produce: --max-line-bytes must be positive (got %d)", pf.maxLineBytes)
	}
	opts, err := pf.producerOpts(cf)
	if err != nil {
		return err
	}
	cl, err := cf.newKafkaClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	res, readErr := produceLines(cmd.Context(), cl, cmd.InOrStdin(), topic, pf.partition, []byte(sep), pf.maxLineBytes)
	fmt.Fprintf(cmd.ErrOrStderr(), "produced %d records to %s\n", res.produced, topic)
	if res.failed > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%d records failed\n", res.failed)
		return fmt.Errorf("%w: %d of %d, first: %w", errProduceFailed, res.failed, res.produced+res.failed,
			newBrokerError("produce to", topic, res.firstErr, ""))
	}
	return readErr
}

// produceResult counts the outcome of every record handed to the sink.
type produceResult struct {
	produced int64
	failed   int64
	firstErr error // of the failures, the one whose promise ran first
}

// produceLines reads r to its end (or to the first read error), producing one
// record per line, then flushes the sink and waits for every promise. The
// returned error is about reading the input; record failures are in the
// result.
func produceLines(ctx context.Context, sink recordSink, r io.Reader, topic string, partition int32,
	sep []byte, maxLineBytes int) (produceResult, error) {
	var (
		mu      sync.Mutex
		res     produceResult
		pending sync.WaitGroup
	)
	promise := func(_ *kgo.Record, err error) {
		defer pending.Done()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.failed++
			if res.firstErr == nil {
				res.firstErr = err
			}
			return
		}
		res.produced++
	}
	br := bufio.NewReaderSize(r, min(maxLineBytes+2, 64<<10))
	var readErr error
	for {
		line, err := readLine(br, maxLineBytes)
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		key, value := splitKey(line, sep)
		rec := &kgo.Record{Topic: topic, Key: key, Value: value}
		if partition >= 0 {
			rec.Partition = partition
		}
		pending.Add(1)
		sink.Produce(ctx, rec, promise)
	}
	// Flush's own error is the context's; each record's outcome reaches its
	// promise, which is what gets counted.
	_ = sink.Flush(context.WithoutCancel(ctx))
	pending.Wait()
	mu.Lock()
	defer mu.Unlock()
	return res, readErr
}

// readLine returns the next line without its "\n" (or "\r\n"), as a fresh
// slice the caller may keep. A last line without a newline still counts;
// io.EOF means there are no more lines.
func readLine(br *bufio.Reader, maxLineBytes int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLineBytes+2 { // +2: room for "\r\n"
			return nil, fmt.Errorf("%w (%d bytes)", errLineTooLong, maxLineBytes)
		}
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("produce: read input: %w", err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("%w (%d bytes)", errLineTooLong, maxLineBytes)
		}
		return line, nil
	}
}

// splitKey cuts line at the first sep. With no separator in the line (or an
// empty sep) the key is nil, which Kafka stores as a null key; a line that
// starts with the separator has an empty, non-null key.
func splitKey(line, sep []byte) (key, value []byte) {
	if len(sep) == 0 {
		return nil, line
	}
	k, v, ok := bytes.Cut(line, sep)
	if !ok {
		return nil, line
	}
	return k, v
}
