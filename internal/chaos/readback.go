package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/tiering"
)

// readbackTimeout bounds reading every partition back after healing.
const readbackTimeout = 90 * time.Second

// endOffsets lists the end offsets (high watermarks) of topics, retrying
// until every partition answers or timeout passes.
func endOffsets(adm *kadm.Client, topics []string, timeout time.Duration) (map[TopicPartition]int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		ends, err := adm.ListEndOffsets(ctx, topics...)
		cancel()
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			out := map[TopicPartition]int64{}
			ends.Each(func(o kadm.ListedOffset) { out[TopicPartition{o.Topic, o.Partition}] = o.Offset })
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
		}
		time.Sleep(conditionPoll)
	}
}

// readBack reads every partition of topics from offset 0 to its end offset
// through a fresh client (no group). A partition it cannot read to the
// end within readbackTimeout is returned in incomplete with the reason.
func readBack(seeds []string, topics []string) (logs map[TopicPartition][]LogRecord, incomplete map[TopicPartition]string, err error) {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, nil, err
	}
	defer admCl.Close()
	ends, err := endOffsets(kadm.NewClient(admCl), topics, formTimeout)
	if err != nil {
		return nil, nil, err
	}
	logs = map[TopicPartition][]LogRecord{}
	incomplete = map[TopicPartition]string{}
	offsets := map[string]map[int32]kgo.Offset{}
	pending := map[TopicPartition]int64{}
	for tp, end := range ends {
		logs[tp] = nil
		if end == 0 {
			continue
		}
		if offsets[tp.Topic] == nil {
			offsets[tp.Topic] = map[int32]kgo.Offset{}
		}
		offsets[tp.Topic][tp.Partition] = kgo.NewOffset().At(0)
		pending[tp] = end
	}
	if len(pending) == 0 {
		return logs, incomplete, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(offsets),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.FetchMaxPartitionBytes(4<<20))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readbackTimeout)
	defer cancel()
	lastErr := map[TopicPartition]error{}
	for len(pending) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				lastErr[TopicPartition{topic, p}] = err
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			tp := TopicPartition{r.Topic, r.Partition}
			logs[tp] = append(logs[tp], LogRecord{Offset: r.Offset, Value: string(r.Value)})
			if end, ok := pending[tp]; ok && r.Offset >= end-1 {
				delete(pending, tp)
			}
		})
	}
	for tp, end := range pending {
		n := len(logs[tp])
		incomplete[tp] = fmt.Sprintf("read %d records of %d within %v (last fetch error: %v)", n, end, readbackTimeout, lastErr[tp])
		delete(logs, tp)
	}
	return logs, incomplete, nil
}

// verifyTimeout bounds `strata verify`.
const verifyTimeout = 3 * time.Minute

// verifyStore runs `strata verify --store URL --json` and returns its
// report: the objects the manifests name that are missing or damaged are
// in Problems.
func verifyStore(bin, store string, env []string) (tiering.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "verify", "--store", store, "--json")
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.Output()
	var rep tiering.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return rep, fmt.Errorf("strata verify: %v (%v); output: %s %s", err, jerr, out, stderr)
	}
	// Exit status 1 with a report means problems, which the report lists.
	return rep, nil
}
