package clustertopo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/freeport"
	"github.com/strata-streaming/strata/internal/miniotest"
)

const (
	// upTimeout bounds `local-cluster.sh up`: a build, MinIO's start and
	// the agents' (the script bounds each wait itself), or MinIO's
	// installation when CI runs without it.
	upTimeout = 10 * time.Minute
	// downTimeout bounds `local-cluster.sh down`, which gives each process
	// 40 s after SIGTERM.
	downTimeout = 4 * time.Minute
	// clusterTimeout bounds each wait on the running cluster: the agents
	// seeing each other, a topic reaching an agent, a record coming back.
	clusterTimeout = 30 * time.Second
	// logTailBytes is how much of each process's log a failure shows.
	logTailBytes = 4 << 10
)

// TestLocalClusterUp: `local-cluster.sh up` starts MinIO and three agents
// that become ready and find each other: each lists all three brokers at
// their advertised addresses. A topic created on agent 1 is written through
// agent 3 and read back through agent 2, and the agents' objects are in
// MinIO's bucket under the prefix. `down` then stops every process it
// recorded.
func TestLocalClusterUp(t *testing.T) {
	if _, err := miniotest.Binary(); err != nil && os.Getenv("CI") == "" {
		t.Skipf("%v (CI is not set, so skipping; scripts/test.sh installs it)", err)
	}
	work := t.TempDir()
	ports := freePorts(t, 11)
	kafka, http, gossip := ports[0:3], ports[3:6], ports[6:9]
	env := scriptEnv(
		"DIR="+work,
		"KAFKA_PORTS="+strings.Join(kafka, " "),
		"HTTP_PORTS="+strings.Join(http, " "),
		"GOSSIP_PORTS="+strings.Join(gossip, " "),
		"MINIO_PORT="+ports[9],
		"MINIO_CONSOLE_PORT="+ports[10],
	)
	// Registered after TempDir, so it runs before the directory goes.
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, work)
		}
		ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
		defer cancel()
		script(t, ctx, env, "down")
	})

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	out := script(t, ctx, env, "up")
	t.Logf("local-cluster.sh up took %v:\n%s", time.Since(start).Round(time.Millisecond), out)

	ctx, cancel = context.WithTimeout(context.Background(), 3*clusterTimeout)
	defer cancel()
	clients := make([]*kgo.Client, len(kafka))
	for i, port := range kafka {
		cl, err := kgo.NewClient(kgo.SeedBrokers(net.JoinHostPort("127.0.0.1", port)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		clients[i] = cl
	}
	for i := range clients {
		waitBrokers(t, ctx, work, clients[i], i+1, kafka)
	}
	roundTrip(t, ctx, clients, kafka)
	checkBucket(t, ctx, env, ports[9])

	pids := recordedPIDs(t, work)
	start = time.Now()
	out = script(t, ctx, env, "down")
	t.Logf("local-cluster.sh down took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	for name, pid := range pids {
		if running(pid) {
			t.Errorf("%s (pid %d) still runs after down", name, pid)
		}
	}
	if out := script(t, ctx, env, "status"); strings.Count(out, "stopped") != len(pids) {
		t.Errorf("status after down:\n%s", out)
	}
}

// waitBrokers waits until agent id, asked directly, lists agents 1..n at
// localhost and their Kafka ports.
func waitBrokers(t *testing.T, ctx context.Context, work string, cl *kgo.Client, id int, kafka []string) {
	t.Helper()
	var want []string
	for i, port := range kafka {
		want = append(want, fmt.Sprintf("%d@localhost:%s", i+1, port))
	}
	var got []string
	err := poll(ctx, func() bool {
		// Sent to the seed, the one agent this client was given: a client
		// would otherwise ask whichever broker it knows.
		resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			got = []string{err.Error()}
			return false
		}
		got = got[:0]
		for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
			got = append(got, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	if err != nil {
		gossipStacks(t, work, id)
		t.Fatalf("agent %d lists brokers %q; want %q: %v", id, got, want, err)
	}
}

// gossipStacks logs the goroutines of agent id that are in the gossip
// code, from a SIGQUIT dump: an agent that never learns of a member (seen
// rarely under CI load, not reproduced at will) is either not receiving
// gossip or stuck inside memberlist, and the stacks tell which.
func gossipStacks(t *testing.T, work string, id int) {
	t.Helper()
	name := fmt.Sprintf("agent-%d", id)
	pid := recordedPIDs(t, work)[name]
	if pid <= 0 || syscall.Kill(pid, syscall.SIGQUIT) != nil {
		return
	}
	logFile := filepath.Join(work, name+".log")
	var dump []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(logFile)
		if i := bytes.Index(b, []byte("\ngoroutine ")); i >= 0 && !running(pid) {
			dump = b[i:]
			break
		}
	}
	for _, g := range bytes.Split(dump, []byte("\n\n")) {
		if bytes.Contains(g, []byte("memberlist")) || bytes.Contains(g, []byte("/membership.")) {
			t.Logf("%s goroutine:\n%s", name, g)
		}
	}
}

// roundTrip creates a topic through agent 1, produces to it through agent
// 3 and consumes it through agent 2.
func roundTrip(t *testing.T, ctx context.Context, clients []*kgo.Client, kafka []string) {
	t.Helper()
	const topic = "local-cluster-check"
	if _, err := kadm.NewClient(clients[0]).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create %s through agent 1: %v", topic, err)
	}
	// Agent 3 learns of the topic by gossip or its reconcile; producing
	// before it has would have it auto-create the topic.
	adm3 := kadm.NewClient(clients[2])
	err := poll(ctx, func() bool {
		md, err := adm3.Metadata(ctx, topic)
		return err == nil && md.Topics[topic].Err == nil && len(md.Topics[topic].Partitions) == 1
	})
	if err != nil {
		t.Fatalf("agent 3 does not list %s: %v", topic, err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:"+kafka[2]), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("through agent 3")}).FirstErr(); err != nil {
		t.Fatalf("produce through agent 3: %v", err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:"+kafka[1]), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	fetchCtx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	for {
		fs := consumer.PollFetches(fetchCtx)
		if err := fetchCtx.Err(); err != nil {
			t.Fatalf("consume %s through agent 2: %v (%v)", topic, err, fs.Errors())
		}
		if fs.NumRecords() > 0 {
			if got := string(fs.Records()[0].Value); got != "through agent 3" {
				t.Fatalf("consumed %q", got)
			}
			return
		}
	}
}

// checkBucket lists, through MinIO's S3 API, what the agents wrote to the
// store: the bucket local-cluster.sh made holds the cluster's objects under
// the prefix of --store.
func checkBucket(t *testing.T, ctx context.Context, env []string, minioPort string) {
	t.Helper()
	creds := keyValues(t, "local-cluster.sh print-env minio", scriptLines(t, env, "print-env", "minio"))
	flags, err := parseFlags(scriptLines(t, env, "print-flags", "1"))
	if err != nil {
		t.Fatal(err)
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(flags["store"], "s3://"), "/")
	prefix, _, _ = strings.Cut(prefix, "?")
	cl, err := minio.New("127.0.0.1:"+minioPort, &minio.Options{
		Creds:  credentials.NewStaticV4(creds["MINIO_ROOT_USER"], creds["MINIO_ROOT_PASSWORD"], ""),
		Region: miniotest.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for obj := range cl.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("list s3://%s/%s/: %v", bucket, prefix, obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	for _, want := range []string{"agents/1.json", "agents/2.json", "agents/3.json", "topics/names/local-cluster-check.json"} {
		if !slices.Contains(keys, prefix+"/"+want) {
			t.Errorf("s3://%s/ has no %s/%s; it holds %q", bucket, prefix, want, keys)
		}
	}
}

// poll calls done until it returns true or ctx (at most clusterTimeout)
// ends.
func poll(ctx context.Context, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// freePorts returns n loopback ports for the script's processes.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	ports, err := freeport.Loopback(n)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, p := range ports {
		s = append(s, strconv.Itoa(p))
	}
	return s
}

// recordedPIDs reads the PID files of the work directory.
func recordedPIDs(t *testing.T, work string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(work, "*.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pids := make(map[string]int)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	if len(pids) != 4 {
		t.Fatalf("PID files %q: want minio's and three agents'", files)
	}
	return pids
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

// logTails prints the end of every log in the work directory.
func logTails(t *testing.T, work string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(work, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Logf("%s: %v", f, err)
			continue
		}
		if len(b) > logTailBytes {
			b = b[len(b)-logTailBytes:]
		}
		t.Logf("--- %s ---\n%s", filepath.Base(f), b)
	}
}
