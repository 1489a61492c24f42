package clustertopo

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
)

// TestComposeMatchesLocalCluster: docker-compose.yml and
// scripts/local-cluster.sh describe the same cluster (see the package doc
// and localFlags for what may differ).
func TestComposeMatchesLocalCluster(t *testing.T) {
	root := repoRoot(t)
	c := cluster{compose: readCompose(t, root), work: t.TempDir()}
	env := scriptEnv("DIR=" + c.work)

	ids := c.compose.agentIDs()
	if len(ids) == 0 {
		t.Fatalf("docker-compose.yml has no %sN service", agentPrefix)
	}
	if got := scriptLines(t, env, "print-agents"); !slices.Equal(got, ids) {
		t.Fatalf("local-cluster.sh runs agents %q; docker-compose.yml has %q", got, ids)
	}
	known := agentFlagNames(t)
	minio := c.compose.Services[minioService]

	var stores []string
	for _, id := range ids {
		t.Run(agentPrefix+id, func(t *testing.T) {
			stores = append(stores, checkAgent(t, c, env, id, known))
		})
	}
	// One bucket and prefix for all: the agents of one cluster share a store.
	for _, s := range stores {
		if s != stores[0] {
			t.Errorf("agents of docker-compose.yml have different stores: %q", stores)
			break
		}
	}

	t.Run(minioService, func(t *testing.T) {
		want := minioArgs(t, minio, c.work)
		if got := scriptLines(t, env, "print-flags", "minio"); !slices.Equal(got, want) {
			t.Errorf("local-cluster.sh starts MinIO with %q; from docker-compose.yml want %q", got, want)
		}
		got := keyValues(t, "local-cluster.sh print-env minio", scriptLines(t, env, "print-env", "minio"))
		if !maps.Equal(got, minio.Environment) {
			t.Errorf("MinIO's environment: local-cluster.sh %q, docker-compose.yml %q", got, minio.Environment)
		}
	})

	t.Run(bucketService, func(t *testing.T) {
		s, ok := c.compose.Services[bucketService]
		if !ok {
			t.Fatalf("docker-compose.yml has no %s service", bucketService)
		}
		if _, ok := s.DependsOn[minioService]; !ok {
			t.Errorf("%s does not depend on %s", bucketService, minioService)
		}
		if !maps.Equal(s.Environment, minio.Environment) {
			t.Errorf("%s's credentials %q are not MinIO's %q", bucketService, s.Environment, minio.Environment)
		}
		if len(stores) == 0 {
			t.Fatal("no agent's store to compare with")
		}
		bucket := bucketOf(t, stores[0])
		script := strings.Join(s.Command, "\n")
		for _, want := range []string{
			"mc alias set local http://" + minioService + ":9000 ",
			"mc mb --ignore-existing local/" + bucket + "\n",
		} {
			if !strings.Contains(script, want) {
				t.Errorf("%s's command does not run %q (the agents' store is bucket %s):\n%s", bucketService, strings.TrimSpace(want), bucket, script)
			}
		}
	})

	t.Run("minio-version", func(t *testing.T) {
		// The version the script installs is the one scripts/test.sh and
		// internal/miniotest install.
		want := strings.TrimPrefix(miniotest.InstallCommand, "go install ")
		for _, path := range []string{"scripts/local-cluster.sh", "scripts/test.sh"} {
			b, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				t.Fatal(err)
			}
			got := regexp.MustCompile(`github\.com/minio/minio@\S+`).FindAllString(string(b), -1)
			if len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != want }) {
				t.Errorf("%s installs %q; want %s", path, got, want)
			}
		}
	})
}

// checkAgent compares agent id's service in docker-compose.yml with what
// the script runs, and returns the agent's --store in compose.
func checkAgent(t *testing.T, c cluster, env []string, id string, known map[string]bool) string {
	service := c.compose.Services[agentPrefix+id]
	if len(service.Command) == 0 || service.Command[0] != "agent" {
		t.Fatalf("command %q: want `agent` and its flags", service.Command)
	}
	composeFlags, err := parseFlags(service.Command[1:])
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	scriptFlags, err := parseFlags(scriptLines(t, env, "print-flags", id))
	if err != nil {
		t.Fatalf("local-cluster.sh print-flags %s: %v", id, err)
	}
	for _, flags := range []map[string]string{composeFlags, scriptFlags} {
		for name := range flags {
			if !known[name] {
				t.Errorf("--%s is not a flag of `strata agent`", name)
			}
		}
	}
	if got := composeFlags["agent-id"]; got != id {
		t.Errorf("docker-compose.yml: %s%s has --agent-id=%s", agentPrefix, id, got)
	}

	// Within docker-compose.yml: the agent advertises the host port its
	// Kafka listener is published on, its healthcheck asks its own HTTP
	// port, it waits for the bucket, and its credentials are MinIO's.
	if kafka, err := portOf(composeFlags["kafka-addr"]); err != nil {
		t.Errorf("--kafka-addr: %v", err)
	} else if host, err := service.hostPort(kafka); err != nil {
		t.Errorf("kafka listener: %v", err)
	} else if want := "localhost:" + host; composeFlags["advertised-kafka-addr"] != want {
		t.Errorf("--advertised-kafka-addr=%s; clients on the host reach the agent at %s", composeFlags["advertised-kafka-addr"], want)
	}
	if http, err := portOf(composeFlags["http-addr"]); err != nil {
		t.Errorf("--http-addr: %v", err)
	} else if check := strings.Join(service.Healthcheck.Test, " "); !strings.Contains(check, ":"+http+"/readyz") {
		t.Errorf("healthcheck %q does not ask /readyz on the HTTP port %s", check, http)
	}
	if got := service.DependsOn[bucketService].Condition; got != "service_completed_successfully" {
		t.Errorf("depends on %s with condition %q; want service_completed_successfully", bucketService, got)
	}
	minioEnv := c.compose.Services[minioService].Environment
	if service.Environment["AWS_ACCESS_KEY_ID"] != minioEnv["MINIO_ROOT_USER"] ||
		service.Environment["AWS_SECRET_ACCESS_KEY"] != minioEnv["MINIO_ROOT_PASSWORD"] {
		t.Errorf("AWS credentials %q are not MinIO's root user %q", service.Environment, minioEnv)
	}

	// Between the files.
	want, err := c.localFlags(id, composeFlags)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if diffs := diffFlags(want, scriptFlags); len(diffs) > 0 {
		t.Errorf("local-cluster.sh print-flags %s differs from docker-compose.yml:\n  %s", id, strings.Join(diffs, "\n  "))
	}
	gotEnv := keyValues(t, "local-cluster.sh print-env "+id, scriptLines(t, env, "print-env", id))
	if !maps.Equal(gotEnv, service.Environment) {
		t.Errorf("environment: local-cluster.sh %q, docker-compose.yml %q", gotEnv, service.Environment)
	}
	return composeFlags["store"]
}

// minioArgs returns the arguments the script must start MinIO with, given
// the minio service: the same server on loopback, on the host ports
// compose publishes, its data in the work directory.
func minioArgs(t *testing.T, minio composeService, work string) []string {
	t.Helper()
	addr, console, data := ":9000", "", ""
	args := minio.Command
	if len(args) == 0 || args[0] != "server" {
		t.Fatalf("minio command %q: want `server ...`", args)
	}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--address" || a == "--console-address") && i+1 < len(args):
			if a == "--address" {
				addr = args[i+1]
			} else {
				console = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "-"):
			t.Fatalf("minio command %q: %s has no counterpart in local-cluster.sh", args, a)
		case data == "":
			data = a
		default:
			t.Fatalf("minio command %q: more than one data directory", args)
		}
	}
	if target, err := minio.volumeTarget(); err != nil || target != data {
		t.Fatalf("minio: data directory %s is not its volume's mount point (%v)", data, err)
	}
	if console == "" {
		t.Fatalf("minio command %q: no --console-address", args)
	}
	loopback := func(addr string) string {
		port, err := portOf(addr)
		if err != nil {
			t.Fatalf("minio address %q: %v", addr, err)
		}
		host, err := minio.hostPort(port)
		if err != nil {
			t.Fatalf("minio: %v", err)
		}
		return "127.0.0.1:" + host
	}
	return []string{"server", "--address", loopback(addr), "--console-address", loopback(console), filepath.Join(work, "minio")}
}

// bucketOf returns the bucket of an s3:// store URL.
func bucketOf(t *testing.T, store string) string {
	t.Helper()
	bucket, _, _ := strings.Cut(strings.TrimPrefix(store, "s3://"), "/")
	if !strings.HasPrefix(store, "s3://") || bucket == "" {
		t.Fatalf("store %q: want s3://bucket/prefix?...", store)
	}
	return bucket
}

// agentFlagNames returns the flags `strata agent --help` lists.
func agentFlagNames(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(testagent.Build(t), "agent", "--help").Output()
	if err != nil {
		t.Fatalf("strata agent --help: %v", err)
	}
	names := make(map[string]bool)
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if !names["store"] || !names["join"] {
		t.Fatalf("strata agent --help lists %d flags, not --store and --join; did its format change?\n%s", len(names), out)
	}
	return names
}
