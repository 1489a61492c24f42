package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// offsetsTopic is the internal topic of the group coordinators and
// disklessStateTopic that of the diskless batch coordinators
// (agent/topics); their partitions must heal too. disklessEnable is the
// topic config that makes a topic diskless (agent/metadata).
const (
	offsetsTopic       = "__consumer_offsets"
	disklessStateTopic = "__diskless_state"
	disklessEnable     = "diskless.enable"
)

// minProgress is how many new acks=all acknowledgements after healing show
// that the cluster serves again.
const minProgress = 100

// topicConfigs: RF 3 with two in-sync replicas required, nothing ever
// deleted (so offsets run from 0), and small segments that seal, upload and
// leave the local disk within seconds.
func topicConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	return map[string]*string{
		"min.insync.replicas":   s("2"),
		"retention.ms":          s("-1"),
		"segment.bytes":         s("65536"),
		"local.retention.bytes": s("131072"),
	}
}

// disklessTopicConfigs are topicConfigs for a diskless topic: the agents
// refuse local.retention.* (there is no local log); min.insync.replicas
// is accepted and ignored, and kept so that the two modes differ only
// where they must.
func disklessTopicConfigs() map[string]*string {
	c := topicConfigs()
	delete(c, "local.retention.bytes")
	v := "true"
	c[disklessEnable] = &v
	return c
}

// Run starts the cluster, runs the workload under cfg's faults, heals,
// checks, writes result.json and the agents' logs to cfg.OutDir, and
// returns the result. It fails t only when the harness itself cannot go on
// (an agent that does not restart, MinIO that does not start); broken
// promises are in the result, for the caller to judge. Run must be called
// from the test's goroutine.
func Run(t testing.TB, cfg Config) *Result {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.OutDir == "" {
		cfg.OutDir = t.TempDir()
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: seed %d (repeat with %s=%d); %d agents on %s, fault phase %v, faults %v, output in %s",
		cfg.Seed, SeedEnv, cfg.Seed, cfg.Agents, cfg.Store, cfg.Duration, cfg.Faults, cfg.OutDir)
	r := &runner{t: t, cfg: cfg, res: &Result{
		Seed: cfg.Seed, Repeat: cfg.Repeat, Started: time.Now(), Agents: cfg.Agents, Store: cfg.Store,
		Duration: cfg.Duration.String(), UnsafeAck: cfg.UnsafeAck, Network: cfg.Network, Diskless: cfg.Diskless, FaultCounts: map[string]int{},
	}}
	// Whatever happens, even a t.Fatal, the result and the logs are kept.
	defer r.save()
	r.run()
	return r.res
}

type runner struct {
	t   testing.TB
	cfg Config
	res *Result
	c   *cluster
	w   *workload
	// epochs samples the diskless partitions' leader epochs (diskless
	// mode only).
	epochs *epochSampler
	// down and paused are the agents a fault has taken away; heal brings
	// them back.
	down, paused map[int]bool
	// faultStart is when the fault phase began, faultEnd when the last
	// fault had ended and every agent was back (heal).
	faultStart, faultEnd time.Time
}

func (r *runner) run() {
	cfg := r.cfg
	r.c = startCluster(r.t, cfg)
	r.down, r.paused = map[int]bool{}, map[int]bool{}

	admCl, err := kgo.NewClient(kgo.SeedBrokers(r.c.seeds()...))
	if err != nil {
		r.t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	var allTopics []string
	var allTPs, oneTPs []TopicPartition
	allConfigs := topicConfigs()
	if cfg.Diskless {
		allConfigs = disklessTopicConfigs()
	}
	for i := range cfg.Topics {
		topic := fmt.Sprintf("chaos-all-%d", i)
		allTopics = append(allTopics, topic)
		r.c.createTopic(adm, topic, cfg.Partitions, allConfigs)
		for p := range cfg.Partitions {
			allTPs = append(allTPs, TopicPartition{topic, p})
		}
	}
	r.res.Topics = slices.Clone(allTopics)
	if !cfg.Diskless { // see Config.Diskless
		const oneTopic = "chaos-acks1"
		r.c.createTopic(adm, oneTopic, cfg.Partitions, topicConfigs())
		for p := range cfg.Partitions {
			oneTPs = append(oneTPs, TopicPartition{oneTopic, p})
		}
		r.res.Topics = append(r.res.Topics, oneTopic)
	}

	if cfg.Diskless {
		r.epochs = startEpochSampler(r.c, allTopics)
	}
	r.w = newWorkload(cfg, r.c.seeds(), allTPs, oneTPs)
	if err := r.w.start(); err != nil {
		r.t.Fatal(err)
	}
	time.Sleep(cfg.Warmup) // the schedule's first quiet period
	if _, ok := waitUntil(formTimeout, func() string {
		if n, _ := r.w.rec.counts(); n == 0 {
			return "no acks=all record acknowledged yet"
		}
		return ""
	}); !ok {
		r.t.Fatalf("chaos: no record acknowledged within %v of the start, before any fault", cfg.Warmup+formTimeout)
	}

	// The partitions whose leaders the faults aim at: the workload's, or
	// in diskless mode the batch coordinators', which the first diskless
	// produce made exist.
	targets, internalTopics := allTPs, []string{offsetsTopic}
	if cfg.Diskless {
		internalTopics = append(internalTopics, disklessStateTopic)
		if targets = r.c.partitions(disklessStateTopic, r.live()); len(targets) == 0 {
			r.t.Fatalf("chaos: no agent lists the partitions of %s after the first acknowledged produce", disklessStateTopic)
		}
	}
	r.faults(targets)
	healed := time.Now()
	r.heal()
	r.faultEnd = time.Now()
	r.t.Logf("chaos: healed after %d faults", len(r.res.Faults))

	before, _ := r.w.rec.counts()
	if _, ok := waitUntil(cfg.HealTimeout, func() string {
		if n, _ := r.w.rec.counts(); n < before+minProgress {
			return "waiting"
		}
		return ""
	}); ok {
		r.res.ProgressAfterHeal = time.Since(healed).Round(time.Millisecond).String()
	}
	time.Sleep(cfg.Cooldown)
	healthTopics := append(slices.Clone(r.res.Topics), internalTopics...)
	if detail, ok := waitUntil(cfg.HealTimeout, func() string { return r.c.unhealthy(healthTopics) }); ok {
		r.res.HealedAfter = time.Since(healed).Round(time.Millisecond).String()
	} else {
		r.res.Unhealthy = detail
	}
	if err := r.w.stopProducers(); err != nil {
		r.t.Logf("chaos: %v", err)
	}
	if r.epochs != nil {
		rep := r.epochs.stop()
		r.res.DisklessEpochs = &rep
	}

	r.awaitEnds(allTopics)
	groupCaughtUp := r.waitGroup(adm, allTopics)
	r.w.stopConsumers()

	logs, incomplete, err := readBack(r.c.seeds(), r.res.Topics)
	if err != nil {
		incomplete = map[TopicPartition]string{}
		for _, tp := range append(slices.Clone(allTPs), oneTPs...) {
			incomplete[tp] = err.Error()
		}
	}
	r.verify()

	rec := r.w.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r.res.Check = Check(History{
		AcksAll: rec.acksAll, AcksOne: rec.acksOne,
		Logs: logs, Incomplete: incomplete,
		Deliveries: rec.deliveries, Commits: rec.commits, Samples: rec.samples,
		GroupCaughtUp: groupCaughtUp,
	})
	r.res.ProduceGaps = ProduceGaps(rec.acksAll, r.res.Faults, r.faultStart, r.faultEnd)
}

// live lists the agents no fault has taken away.
func (r *runner) live() []int {
	var out []int
	for i := range r.c.agents {
		if !r.down[i] && !r.paused[i] {
			out = append(out, i)
		}
	}
	return out
}

// faults injects planned faults until the fault phase is over.
func (r *runner) faults(tps []TopicPartition) {
	planner := NewPlanner(r.cfg.Seed, r.cfg.Faults, r.cfg.Timings)
	r.faultStart = time.Now()
	r.res.FaultPhaseStart = r.faultStart
	deadline := r.faultStart.Add(r.cfg.Duration)
	for i := 0; r.cfg.MaxFaults == 0 || i < r.cfg.MaxFaults; i++ {
		f := planner.Next()
		if time.Now().Add(f.Gap).After(deadline) {
			return
		}
		time.Sleep(f.Gap)
		r.inject(f, tps)
	}
}

// inject runs one fault to its end: at return every agent is up again and
// the store proxy passes everything.
func (r *runner) inject(f Fault, tps []TopicPartition) {
	n := len(r.c.agents)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	rec := FaultRecord{At: time.Since(r.faultStart).Round(time.Millisecond).String(), Time: time.Now(), Fault: f}
	target := f.Target % n
	tp := tps[f.Target%len(tps)]
	role := "" // what the target leads, when the fault aimed at a leader
	if f.Leader {
		if l := r.c.leaderOf(tp, all); l >= 0 {
			target, role = l, fmt.Sprintf(" (leader of %s)", tp)
		}
	}
	one := []int{target}
	switch f.Kind {
	case FaultKill:
		r.held(rec, one, fmt.Sprintf("SIGKILL agent %d%s, restart after %v", target, role, f.Hold), f.Hold,
			func() { r.kill(target) }, func() { r.restart(target) })
	case FaultWipe:
		r.held(rec, one, fmt.Sprintf("SIGKILL agent %d%s, empty its data directory, restart after %v", target, role, f.Hold), f.Hold,
			func() {
				r.kill(target)
				if err := emptyDir(r.c.agents[target].DataDir()); err != nil {
					r.t.Errorf("chaos: wipe agent %d: %v", target, err)
				}
			}, func() { r.restart(target) })
	case FaultPause:
		r.held(rec, one, fmt.Sprintf("SIGSTOP agent %d%s for %v", target, role, f.Hold), f.Hold,
			func() { r.pause(target) }, func() { r.resume(target) })
	case FaultStallKill:
		replicas := r.c.replicasOf(tp, all)
		if len(replicas) == 0 {
			replicas = all
		}
		followers := slices.DeleteFunc(slices.Clone(replicas), func(i int) bool { return i == target })
		what := fmt.Sprintf("%s: SIGSTOP followers %v for %v, SIGKILL leader %d, SIGCONT followers, restart %d after %v",
			tp, followers, f.Stall, target, target, f.Hold)
		r.held(rec, append(one, followers...), what, f.Hold, func() {
			for _, i := range followers {
				r.pause(i)
			}
			time.Sleep(f.Stall)
			r.kill(target)
			for _, i := range followers {
				r.resume(i)
			}
		}, func() { r.restart(target) })
	case FaultDrain:
		r.held(rec, one, fmt.Sprintf("SIGTERM agent %d (it drains, then exits), restart after %v", target, f.Hold), f.Hold,
			func() {
				began := time.Now()
				if err := r.c.agents[target].Stop(); err != nil {
					r.t.Errorf("chaos: agent %d did not drain and exit by itself: %v", target, err)
				}
				r.down[target] = true
				r.t.Logf("chaos: agent %d drained and exited in %v", target, time.Since(began).Round(time.Millisecond))
			}, func() { r.restart(target) })
	case FaultDiskFull:
		ballast := filepath.Join(r.c.agents[target].DataDir(), "chaos-ballast")
		r.held(rec, one, fmt.Sprintf("fill agent %d's disk for %v", target, f.Hold), f.Hold,
			func() {
				if err := fillDisk(ballast); err != nil {
					r.t.Errorf("chaos: fill agent %d's disk: %v", target, err)
				}
			}, func() {
				if err := os.Remove(ballast); err != nil {
					r.t.Errorf("chaos: free agent %d's disk: %v", target, err)
				}
			})
	case FaultStore, FaultStoreFail:
		r.held(rec, nil, fmt.Sprintf("store proxy for %v: %v", f.Hold, f.Store), f.Hold,
			func() { r.c.proxy.Set(f.Store) }, func() { r.c.proxy.Set(StoreFault{}) })
	case FaultNetCut:
		peers := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == target })
		if f.Partial {
			peers = peers[f.Peer%len(peers) : f.Peer%len(peers)+1]
		}
		r.held(rec, append(one, peers...), fmt.Sprintf("cut the network between agent %d and agents %v for %v", target, peers, f.Hold), f.Hold,
			func() {
				for _, p := range peers {
					r.netErr(r.c.net.Cut(target, p))
				}
			}, func() {
				for _, p := range peers {
					r.netErr(r.c.net.Heal(target, p))
				}
			})
	case FaultStoreCut:
		r.held(rec, one, fmt.Sprintf("cut the network between agent %d and the store for %v", target, f.Hold), f.Hold,
			func() { r.netErr(r.c.net.CutStore(target)) }, func() { r.netErr(r.c.net.HealStore(target)) })
	}
}

// held records and logs a fault on agents, starts it, keeps it for hold
// and ends it.
func (r *runner) held(rec FaultRecord, agents []int, what string, hold time.Duration, start, end func()) {
	rec.Agents, rec.What = agents, what
	r.logFault(rec)
	start()
	time.Sleep(hold)
	end()
}

// netErr reports a cut or heal that iproute2 refused: the run then no
// longer injects what its plan says.
func (r *runner) netErr(err error) {
	if err != nil {
		r.t.Errorf("chaos: %v", err)
	}
}

// fillDisk writes zeros to path until the filesystem is full (ENOSPC),
// and keeps the file.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// emptyDir removes everything in dir and keeps dir itself, as a new empty
// disk mounted where the old one was.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) logFault(rec FaultRecord) {
	r.res.Faults = append(r.res.Faults, rec)
	r.res.FaultCounts[string(rec.Fault.Kind)]++
	acked, _ := r.w.rec.counts()
	r.t.Logf("chaos: %s fault %d: %s (%d acks=all acknowledged so far)", rec.At, len(r.res.Faults), rec.What, acked)
}

func (r *runner) kill(i int)   { r.c.agents[i].Kill(); r.down[i] = true; delete(r.paused, i) }
func (r *runner) pause(i int)  { r.c.agents[i].Pause(); r.paused[i] = true }
func (r *runner) resume(i int) { r.c.agents[i].Resume(); delete(r.paused, i) }

// restart starts a killed agent again; it fails the test if the agent
// does not become ready (testagent's bound).
func (r *runner) restart(i int) {
	r.c.agents[i].Restart(r.t)
	delete(r.down, i)
}

// heal ends every fault still in force.
func (r *runner) heal() {
	if r.c.proxy != nil {
		r.c.proxy.Set(StoreFault{})
	}
	if r.c.net != nil {
		r.netErr(r.c.net.HealAll())
	}
	for i := range r.paused {
		r.resume(i)
	}
	for i := range r.down {
		r.restart(i)
	}
}

// waitGroup waits until the group's committed offsets reach the end of
// every acks=all partition.
func (r *runner) waitGroup(adm *kadm.Client, topics []string) bool {
	start := time.Now()
	ends, err := endOffsets(adm, topics, formTimeout)
	if err != nil {
		r.t.Logf("chaos: %v", err)
		return false
	}
	detail, ok := waitUntil(r.cfg.HealTimeout, func() string {
		committed := r.w.sampleOnce(r.t.Context(), adm)
		for tp, end := range ends {
			if got, ok := committed[tp]; end > 0 && (!ok || got < end) {
				return fmt.Sprintf("%s committed %d of end %d", tp, got, end)
			}
		}
		return ""
	})
	if !ok {
		r.t.Logf("chaos: the group did not catch up within %v: %s", r.cfg.HealTimeout, detail)
		return false
	}
	r.res.GroupCaughtUpAfter = time.Since(start).Round(time.Millisecond).String()
	return true
}

// endsTimeout bounds awaitEnds: a few times the diskless agents' cached
// view of a partition's offsets (viewMaxAge, 2 s, in agent/diskless).
const endsTimeout = 10 * time.Second

// awaitEnds waits, at most endsTimeout, until every agent's ListOffsets
// (latest) of topics reaches past the last acknowledged record of each
// partition, and records in the result how far behind the answers were.
// The group's catch-up and the read back both take their ends from
// ListOffsets: an end below an acknowledged record would have them stop
// short and report it lost. A leader (classic) answers its high
// watermark, which an acks=all acknowledgement has passed; a diskless
// partition is answered by whichever agent is asked, from its cached view,
// which may miss what was committed through another agent in the last
// two seconds. A record truly lost leaves the wait at its bound, and the
// check finds it.
func (r *runner) awaitEnds(topics []string) {
	want := map[TopicPartition]int64{}
	r.w.rec.mu.Lock()
	for _, a := range r.w.rec.acksAll {
		want[a.TopicPartition] = max(want[a.TopicPartition], a.Offset+1)
	}
	r.w.rec.mu.Unlock()
	start := time.Now()
	first := true
	detail, ok := waitUntil(endsTimeout, func() string {
		var behind []string
		records := int64(0)
		for i, cl := range r.c.direct {
			ends, err := endOffsets(kadm.NewClient(cl), topics, requestTimeout)
			if err != nil {
				return fmt.Sprintf("agent %d: %v", i, err)
			}
			for _, tp := range sortedKeys(want) {
				if got := ends[tp]; got < want[tp] {
					behind = append(behind, fmt.Sprintf("agent %d says %s ends at %d, acknowledged up to %d", i, tp, got, want[tp]-1))
					records = max(records, want[tp]-got)
				}
			}
		}
		if first && len(behind) > 0 {
			r.res.EndsBehindAcks = fmt.Sprintf("%d answers up to %d records behind (first: %s)", len(behind), records, behind[0])
		}
		first = false
		return strings.Join(behind, "; ")
	})
	switch {
	case !ok:
		r.t.Logf("chaos: ListOffsets below acknowledged records after %v: %s", endsTimeout, detail)
		r.res.EndsBehindAcks += fmt.Sprintf("; still behind after %v", endsTimeout)
	case r.res.EndsBehindAcks != "":
		r.res.EndsBehindAcks += fmt.Sprintf("; caught up after %v", time.Since(start).Round(time.Millisecond))
	}
}

// verify runs `strata verify` on the store, straight to MinIO.
func (r *runner) verify() {
	rep, err := verifyStore(testagent.BuildTags(r.t, r.c.buildTags...), r.c.verifyURL, r.c.env)
	if err != nil {
		r.res.VerifyError = err.Error()
		r.res.VerifyStats = "error"
		return
	}
	r.res.Verify = &rep
	r.res.VerifyStats = fmt.Sprintf("%d partitions, %d segments, %d bytes in the store, %d problems, %d orphans",
		rep.Partitions, rep.Segments, rep.Bytes, len(rep.Problems), len(rep.Orphans))
	for i, p := range rep.Problems {
		if i == 10 {
			break
		}
		r.res.VerifyStats += fmt.Sprintf("; %s %s", p.What, p.Key)
	}
}

// save fills in the counts, writes result.json and the agents' logs, and
// logs the summary. It runs even when the run was cut short.
func (r *runner) save() {
	res := r.res
	if r.w != nil {
		// Cut short by a t.Fatal: the clients must not outlive the run.
		r.w.stopProducers()
		r.w.stopConsumers()
	}
	if r.epochs != nil {
		r.epochs.stop()
	}
	res.Elapsed = time.Since(res.Started).Round(time.Second).String()
	if r.c != nil && r.c.proxy != nil {
		s := r.c.proxy.Stats()
		res.Proxy = &s
	}
	if r.w != nil {
		rec := r.w.rec
		rec.mu.Lock()
		res.AckedAll, res.FailedAll, res.AckedOne, res.FailedOne = len(rec.acksAll), rec.failedAll, len(rec.acksOne), rec.failedOne
		res.ProduceErrors, res.ClientDataLoss, res.SkippedFull = rec.produceErr, rec.dataLoss, rec.skipped
		res.CommitErrors, res.FetchErrors, res.ConsumeErrors = rec.commitErrs, rec.fetchErrs, rec.consumeErr
		rec.mu.Unlock()
	}
	if r.c != nil {
		for i, a := range r.c.agents {
			path := filepath.Join(r.cfg.OutDir, fmt.Sprintf("agent-%d.log", i))
			if err := os.WriteFile(path, []byte(a.Logs()), 0o644); err == nil {
				res.AgentLogs = append(res.AgentLogs, path)
			}
		}
	}
	if res.Check == nil {
		res.Failures = []string{"the run did not reach the check"}
		res.Outcome = "ABORTED"
	} else {
		res.finish()
	}
	path, err := res.write(r.cfg.OutDir)
	if err != nil {
		r.t.Logf("chaos: write result: %v", err)
	}
	r.t.Logf("\n%s  result: %s", res.Summary(), path)
}
