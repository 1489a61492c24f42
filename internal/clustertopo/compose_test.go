package clustertopo

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of docker-compose.yml the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string                       `yaml:"image"`
	Entrypoint  []string                     `yaml:"entrypoint"`
	Command     []string                     `yaml:"command"`
	Environment map[string]string            `yaml:"environment"`
	Ports       []string                     `yaml:"ports"`
	Volumes     []string                     `yaml:"volumes"`
	DependsOn   map[string]composeDependency `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

type composeDependency struct {
	Condition string `yaml:"condition"`
}

// Service names in docker-compose.yml, and the prefix of the agents'.
const (
	minioService  = "minio"
	bucketService = "create-bucket"
	agentPrefix   = "agent-"
)

func readCompose(t *testing.T, root string) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// agentIDs returns the ids of the agent-N services, sorted.
func (f composeFile) agentIDs() []string {
	var ids []string
	for name := range f.Services {
		if id, ok := strings.CutPrefix(name, agentPrefix); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// hostPort returns the host port a service publishes containerPort on.
func (s composeService) hostPort(containerPort string) (string, error) {
	for _, p := range s.Ports {
		host, container, ok := strings.Cut(p, ":")
		if ok && container == containerPort && !strings.Contains(host, ":") {
			return host, nil
		}
	}
	return "", fmt.Errorf("no \"HOST:%s\" in ports %q", containerPort, s.Ports)
}

// volumeTarget returns the container path of the service's only volume.
func (s composeService) volumeTarget() (string, error) {
	if len(s.Volumes) != 1 {
		return "", fmt.Errorf("volumes %q: want exactly one", s.Volumes)
	}
	_, target, ok := strings.Cut(s.Volumes[0], ":")
	if !ok {
		return "", fmt.Errorf("volume %q is not NAME:PATH", s.Volumes[0])
	}
	return target, nil
}

// parseFlags turns --name=value arguments into a map. Both files write
// every flag that way, so a value is never a separate argument.
func parseFlags(args []string) (map[string]string, error) {
	flags := make(map[string]string, len(args))
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok || name == "" {
			return nil, fmt.Errorf("argument %q: want --name=value", a)
		}
		if _, dup := flags[name]; dup {
			return nil, fmt.Errorf("--%s is given twice", name)
		}
		flags[name] = value
	}
	return flags, nil
}

// portOf returns the port of a ":port" or "host:port" address.
func portOf(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

// scriptGossipPorts are the gossip ports scripts/local-cluster.sh gives
// each agent by default. In compose every agent binds :7946 in its own
// container; on one host each needs a port of its own, so this is the one
// address with no counterpart in docker-compose.yml.
var scriptGossipPorts = map[string]string{"1": "17946", "2": "17947", "3": "17948"}

// cluster is what localFlags translates with: the compose file, and the
// script's work directory.
type cluster struct {
	compose composeFile
	work    string
}

// localFlags returns the flags scripts/local-cluster.sh must start agent id
// with, given the flags docker-compose.yml gives it. Only addresses and the
// data directory change, by these rules; every other flag is copied:
//
//	--kafka-addr, --http-addr  :P  ->  127.0.0.1:H, H the host port compose publishes P on
//	--advertised-kafka-addr        unchanged (already the host port)
//	--gossip-addr              :P  ->  127.0.0.1:scriptGossipPorts[id]
//	--join    agent-N:P,...        ->  127.0.0.1:scriptGossipPorts[N],...
//	--data-dir                     ->  <work>/agent-<id> (compose: the volume's mount point)
//	--store   endpoint=http://minio:P  ->  endpoint=http://127.0.0.1:H, H MinIO's host port for P
func (c cluster) localFlags(id string, composeFlags map[string]string) (map[string]string, error) {
	service := c.compose.Services[agentPrefix+id]
	local := make(map[string]string, len(composeFlags))
	for name, value := range composeFlags {
		var err error
		switch name {
		case "kafka-addr", "http-addr":
			value, err = c.published(service, value)
		case "gossip-addr":
			value, err = gossipAddr(id, value)
		case "join":
			var seeds []string
			for _, seed := range strings.Split(value, ",") {
				host, port, splitErr := net.SplitHostPort(seed)
				if splitErr != nil {
					return nil, fmt.Errorf("--join %q: %v", seed, splitErr)
				}
				peer, ok := strings.CutPrefix(host, agentPrefix)
				if !ok {
					return nil, fmt.Errorf("--join %q: not an %sN service", seed, agentPrefix)
				}
				addr, err := gossipAddr(peer, ":"+port)
				if err != nil {
					return nil, fmt.Errorf("--join %q: %v", seed, err)
				}
				seeds = append(seeds, addr)
			}
			value = strings.Join(seeds, ",")
		case "data-dir":
			var target string
			target, err = service.volumeTarget()
			if err == nil && value != target {
				err = fmt.Errorf("--data-dir %s is not the volume's mount point %s", value, target)
			}
			value = filepath.Join(c.work, agentPrefix+id)
		case "store":
			value, err = c.localStore(value)
		}
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		local[name] = value
	}
	return local, nil
}

// published maps a listener address ":P" in a container to the loopback
// address on the port compose publishes P on.
func (c cluster) published(service composeService, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host != "" {
		return "", fmt.Errorf("%q: want :port (every interface of the container)", addr)
	}
	hostPort, err := service.hostPort(port)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", hostPort), nil
}

// gossipAddr maps agent id's gossip address in compose to the script's.
func gossipAddr(id, addr string) (string, error) {
	if port, err := portOf(addr); err != nil || port != "7946" {
		return "", fmt.Errorf("%q: want port 7946, the one scriptGossipPorts stands in for", addr)
	}
	port, ok := scriptGossipPorts[id]
	if !ok {
		return "", fmt.Errorf("agent %s has no entry in scriptGossipPorts", id)
	}
	return net.JoinHostPort("127.0.0.1", port), nil
}

// localStore maps the compose store URL's endpoint (the minio service) to
// MinIO on loopback; the bucket, prefix and other parameters stay.
func (c cluster) localStore(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	endpoint, err := url.Parse(q.Get("endpoint"))
	if err != nil {
		return "", fmt.Errorf("endpoint: %v", err)
	}
	if endpoint.Hostname() != minioService {
		return "", fmt.Errorf("endpoint %q: want the %s service", endpoint, minioService)
	}
	hostPort, err := c.compose.Services[minioService].hostPort(endpoint.Port())
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %s: %v", endpoint, minioService, err)
	}
	endpoint.Host = net.JoinHostPort("127.0.0.1", hostPort)
	// Rewritten in place rather than re-encoded, so a difference reads in
	// the order and escaping the files use.
	params := strings.Split(u.RawQuery, "&")
	for i, p := range params {
		if strings.HasPrefix(p, "endpoint=") {
			params[i] = "endpoint=" + endpoint.String()
		}
	}
	u.RawQuery = strings.Join(params, "&")
	return u.String(), nil
}

// sameStore reports whether two store URLs say the same, whatever the
// order of their parameters.
func sameStore(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	qa, qb := ua.Query(), ub.Query()
	if len(qa) != len(qb) {
		return false
	}
	for k, v := range qa {
		if !slices.Equal(v, qb[k]) {
			return false
		}
	}
	return ua.Scheme == ub.Scheme && ua.Host == ub.Host && ua.Path == ub.Path
}

// diffFlags lists how got differs from want, one line a flag.
func diffFlags(want, got map[string]string) []string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("--%s: missing (want %q)", name, w))
		case name == "store" && sameStore(w, g):
		case g != w:
			diffs = append(diffs, fmt.Sprintf("--%s: %q, want %q", name, g, w))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("--%s=%q: docker-compose.yml has no such flag", name, g))
		}
	}
	slices.Sort(diffs)
	return diffs
}
