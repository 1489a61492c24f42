package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/testagent"
)

// offsetsWorkload is the commits and groups of the __consumer_offsets
// measurement: the 1,000,000 commits of 100 groups with
// STRATA_OFFSETS_FULL=1 (many minutes), else a size that stays well under
// a minute here.
func offsetsWorkload() (commits, groups int) {
	if os.Getenv("STRATA_OFFSETS_FULL") != "" {
		return 1_000_000, 100
	}
	return 10_000, 20
}

var coordinatorLoaded = regexp.MustCompile(`group coordinator loaded.* records=(\d+).* took=(\S+)`)

// lastLoad is the record count and replay time of the newest "group
// coordinator loaded" line in the agent's log.
func lastLoad(t *testing.T, a *testagent.Agent) (records int, took time.Duration) {
	t.Helper()
	m := coordinatorLoaded.FindAllStringSubmatch(a.Logs(), -1)
	if len(m) == 0 {
		t.Fatal("no group coordinator load in the agent's log")
	}
	last := m[len(m)-1]
	records, _ = strconv.Atoi(last[1])
	took, err := time.ParseDuration(last[2])
	if err != nil {
		t.Fatalf("coordinator load time %q: %v", last[2], err)
	}
	return records, took
}

// TestConsumerOffsetsCompacted (issue 22): __consumer_offsets is compacted,
// so loading a group coordinator replays the live keys, not every commit.
// Commits of several groups are made with the cleaner off; the
// coordinator's load (records replayed, time) and the partition's disk are
// measured after a restart, then again after the cleaner ran and another
// restart. Every group's offsets read back as last committed.
func TestConsumerOffsetsCompacted(t *testing.T) {
	commits, groups := offsetsWorkload()
	const partitions = 5
	a := testagent.Start(t, testagent.Options{ExtraArgs: append([]string{"--log-cleaner-enable=false",
		"--offsets-topic-partitions=1", "--offsets-topic-segment-bytes=65536"}, cleanerArgs...)})
	adm := newAdmin(t, a.Addr())
	const topic = "offsets-source"
	createTopic(t, adm, topic, partitions, nil)

	// Each group commits all partitions, commits/groups times, from its
	// own goroutine; the last commit of group g at partition p is
	// round*1000+p.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	perGroup := commits / groups
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range perGroup {
				offs := kadm.Offsets{}
				for p := range partitions {
					offs.AddOffset(topic, int32(p), int64(round*1000+p), -1)
				}
				resp, err := adm.CommitOffsets(ctxT(t, opTimeout), fmt.Sprintf("group-%d", g), offs)
				if err == nil {
					err = resp.Error()
				}
				if err != nil {
					errs <- fmt.Errorf("group %d round %d: %w", g, round, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d commits of %d groups (%d partitions each) in %v", perGroup*groups, groups, partitions, time.Since(start).Round(time.Millisecond))
	// A deleted offset is a tombstone, which the replay must honour before
	// and after cleaning.
	dr, err := adm.DeleteOffsets(ctxT(t, opTimeout), "group-1", kadm.TopicsSet{topic: {0: {}}})
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete offsets: %v", err)
	}

	// measure restarts the agent, lets the first OffsetFetch trigger the
	// coordinator's load (the agent logs the records replayed and the
	// time taken; firstFetch adds the client's round trips), and checks
	// every group's offsets.
	measure := func(when string) (records int, load, firstFetch time.Duration, disk int64) {
		t.Helper()
		a.Restart(t)
		adm := newAdmin(t, a.Addr())
		start := time.Now()
		if _, err := adm.FetchOffsets(ctxT(t, opTimeout), "group-0"); err != nil {
			t.Fatalf("%s: fetch offsets: %v", when, err)
		}
		firstFetch = time.Since(start)
		for g := range groups {
			resp, err := adm.FetchOffsets(ctxT(t, opTimeout), fmt.Sprintf("group-%d", g))
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatalf("%s: group %d: %v", when, g, err)
			}
			for p := range partitions {
				o, ok := resp.Lookup(topic, int32(p))
				if g == 1 && p == 0 {
					if ok && o.At >= 0 {
						t.Fatalf("%s: group 1's deleted offset reads back as %d", when, o.At)
					}
					continue
				}
				if want := int64((perGroup-1)*1000 + p); !ok || o.At != want {
					t.Fatalf("%s: group %d partition %d: offset %d (found %v), want %d", when, g, p, o.At, ok, want)
				}
			}
		}
		records, load = lastLoad(t, a)
		return records, load, firstFetch, partitionLogBytes(t, a, "__consumer_offsets", 0)
	}
	recordsBefore, loadBefore, fetchBefore, diskBefore := measure("before cleaning")

	a.AddArgs("--log-cleaner-enable=true")
	a.Restart(t)
	// One pass reads the whole log twice (the offset map, then the
	// rewrite): give it conditionLimit per 100,000 commits.
	cleanStart := time.Now()
	deadline := cleanStart.Add(conditionLimit * time.Duration(max(1, commits/100_000)))
	for metricValue(t, a.HTTPAddr(), "strata_log_cleaner_runs_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the cleaner did not run:\n%s", a.Logs())
		}
		time.Sleep(conditionPoll)
	}
	cleaned := time.Since(cleanStart)
	cleanRead := metricValue(t, a.HTTPAddr(), "strata_log_cleaner_read_bytes_total")
	cleanPass := metricValue(t, a.HTTPAddr(), "strata_log_cleaner_last_run_duration_seconds")
	recordsAfter, loadAfter, fetchAfter, diskAfter := measure("after cleaning")

	t.Logf("__consumer_offsets: %d commits of %d groups, %d live keys; cleaned within %v of the restart (the pass read %d bytes in %.3fs)",
		perGroup*groups, groups, groups*partitions, cleaned.Round(time.Millisecond), int64(cleanRead), cleanPass)
	t.Logf("before cleaning: coordinator load replayed %d records in %v (first OffsetFetch %v), %d bytes on disk",
		recordsBefore, loadBefore.Round(time.Microsecond), fetchBefore.Round(time.Millisecond), diskBefore)
	t.Logf("after cleaning:  coordinator load replayed %d records in %v (first OffsetFetch %v), %d bytes on disk",
		recordsAfter, loadAfter.Round(time.Microsecond), fetchAfter.Round(time.Millisecond), diskAfter)
	// The active segment (up to --offsets-topic-segment-bytes) is never
	// cleaned; the rest holds one record per live key.
	activeRecords := 65536 / 40 // records of ~40 bytes in a full active segment, an upper bound
	if recordsAfter > groups*partitions+activeRecords || recordsAfter*4 > recordsBefore {
		t.Fatalf("after cleaning the coordinator replayed %d records (before %d) for %d live keys", recordsAfter, recordsBefore, groups*partitions)
	}
	if diskAfter*4 > diskBefore {
		t.Fatalf("after cleaning __consumer_offsets holds %d bytes, before %d", diskAfter, diskBefore)
	}
}
