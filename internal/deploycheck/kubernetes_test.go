package deploycheck

import (
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/strata-streaming/strata/agent"
)

// podIndexField is the downward-API path of a StatefulSet pod's ordinal.
const podIndexField = "metadata.labels['apps.kubernetes.io/pod-index']"

// sampleFields stand in for the pod fields the downward API fills in, so
// that flags built from them can be parsed and validated.
var sampleFields = map[string]string{
	"metadata.name":      "strata-0",
	"metadata.namespace": "strata",
	"status.podIP":       "10.1.2.3",
	podIndexField:        "0",
}

// cmdOnlyFlags are `strata agent` flags that cmd/strata, not agent.Config,
// registers, with the values each accepts.
var cmdOnlyFlags = map[string][]string{
	"config":     nil, // any path
	"log-level":  {"debug", "info", "warn", "error"},
	"log-format": {"text", "json"},
}

// soleCopyUploadLimit is how long a forced drain that ran out of time
// spends uploading the partitions only its agent holds before it stops
// (UploadSoleCopies in agent/control/drain.go).
const soleCopyUploadLimit = time.Minute

// metricFlags are the agent metrics that exist only when a flag is set,
// with that flag: an autoscaler that scales on one needs it.
var metricFlags = map[string]string{
	"strata_agent_utilization_ratio": "network-capacity",
}

var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestKubernetesManifests: see the package doc.
func TestKubernetesManifests(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, kubernetesDir)
	docs, files := readManifests(t, dir)
	kust := readKustomization(t, dir, files)

	var sts statefulSet
	only(t, docs, "apps/v1", "StatefulSet").decode(t, &sts)
	var cm configMap
	only(t, docs, "v1", "ConfigMap").decode(t, &cm)
	var pdb podDisruptionBudget
	only(t, docs, "policy/v1", "PodDisruptionBudget").decode(t, &pdb)
	var hpa horizontalPodAutoscaler
	only(t, docs, "autoscaling/v2", "HorizontalPodAutoscaler").decode(t, &hpa)
	if ns := ofKind(docs, "v1", "Namespace"); len(ns) > 0 && (len(ns) > 1 || ns[0].name != kust.Namespace) {
		t.Errorf("Namespace objects %v; the kustomization puts everything in %q", ns, kust.Namespace)
	}

	pod := sts.Spec.Template
	if !selects(sts.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("StatefulSet selector %v does not select its pods %v", sts.Spec.Selector.MatchLabels, pod.Metadata.Labels)
	}
	c := agentContainer(t, sts)
	if !slices.ContainsFunc(kust.Images, func(i struct {
		Name string `yaml:"name"`
	}) bool {
		return i.Name == c.Image
	}) {
		t.Errorf("container image %q has no entry in the kustomization's images", c.Image)
	}

	samples := newSecretSamples(t)
	flags, secretRefs := checkAgentFlags(t, c, cm, pod.Spec, samples)
	port := func(flag string) int {
		_, p, err := net.SplitHostPort(flags.Lookup(flag).Value.String())
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			t.Fatalf("--%s %q: want host:port", flag, flags.Lookup(flag).Value)
		}
		return n
	}
	httpPort, gossipPort := port("http-addr"), port("gossip-addr")
	listeners := manifestListeners(t, flags)
	var clientPorts []int
	interAgentPort := 0
	for _, l := range listeners {
		if l.interAgent {
			interAgentPort = l.port
		} else {
			clientPorts = append(clientPorts, l.port)
		}
	}
	if len(clientPorts) == 0 { // one listener serves both
		clientPorts = []int{interAgentPort}
	}

	t.Run("listeners", func(t *testing.T) {
		type bound struct {
			what, host, portName, protocol string
			port                           int
		}
		var all []bound
		for _, l := range listeners {
			all = append(all, bound{"Kafka listener " + l.name, l.host, l.portName, "TCP", l.port})
		}
		gossipHost, _, _ := net.SplitHostPort(flags.Lookup("gossip-addr").Value.String())
		httpHost, _, _ := net.SplitHostPort(flags.Lookup("http-addr").Value.String())
		all = append(all,
			bound{"--http-addr", httpHost, "http", "TCP", httpPort},
			bound{"--gossip-addr", gossipHost, "gossip-tcp", "TCP", gossipPort},
			bound{"--gossip-addr", gossipHost, "gossip-udp", "UDP", gossipPort})
		for _, l := range all {
			// Services and other pods reach the pod's IP, so the listener
			// must bind every interface.
			if l.host != "" && l.host != "0.0.0.0" {
				t.Errorf("%s binds %q; want :PORT, every interface of the pod", l.what, l.host)
			}
			if got, ok := c.namedPort(l.portName, l.protocol); !ok || got != l.port {
				t.Errorf("container port %s/%s = %d (present %v); %s listens on %d", l.portName, l.protocol, got, ok, l.what, l.port)
			}
		}
		if interAgentPort == 0 {
			t.Error("no listener carries replication: name one with --inter-agent-listener")
		}
	})

	t.Run("addresses", func(t *testing.T) {
		raw, _ := splitArgs(c.Args[1:])
		env := c.envVars()
		// Each pod advertises its own stable DNS name for every listener:
		// POD.HEADLESS.NAMESPACE...
		advertised := advertisedListeners(raw)
		for _, l := range listeners {
			adv := advertised[l.name]
			host, p, err := net.SplitHostPort(adv)
			if err != nil || p != strconv.Itoa(l.port) {
				t.Errorf("listener %s is advertised as %q (in the container's args); want HOST:%d, its port", l.name, adv, l.port)
			}
			if want := "$(POD_NAME)." + sts.Spec.ServiceName + "."; !strings.HasPrefix(host, want) || env["POD_NAME"] != "fieldRef:metadata.name" {
				t.Errorf("listener %s is advertised as %q: want the pod's name under the headless Service, %s..., POD_NAME from metadata.name (env %v)", l.name, adv, want, env)
			}
		}
		if _, p, err := net.SplitHostPort(flags.Lookup("gossip-advertise-addr").Value.String()); err != nil || p != strconv.Itoa(gossipPort) {
			t.Errorf("--gossip-advertise-addr %q: want port %d", flags.Lookup("gossip-advertise-addr").Value, gossipPort)
		}
		joins := strings.Split(raw["join"], ",")
		for _, seed := range joins {
			host, p, err := net.SplitHostPort(seed)
			if err != nil || p != strconv.Itoa(gossipPort) || (host != sts.Spec.ServiceName && !strings.HasPrefix(host, sts.Spec.ServiceName+".") && !strings.Contains(host, "."+sts.Spec.ServiceName+".")) {
				t.Errorf("--join %q: want the headless Service %s (or its pods) on the gossip port %d", seed, sts.Spec.ServiceName, gossipPort)
			}
		}
		if id := raw["agent-id"]; id == "" && raw["agent-id-from-hostname"] != "true" {
			t.Errorf("the agents take neither --agent-id nor --agent-id-from-hostname: a pod rescheduled onto an empty volume would register as a new agent")
		}
		if id := raw["agent-id"]; id != "" {
			for _, m := range envReference.FindAllStringSubmatch(id, -1) {
				if env[m[1]] != "fieldRef:"+podIndexField {
					t.Errorf("--agent-id %q: $(%s) is %q, want the pod index (%s)", id, m[1], env[m[1]], podIndexField)
				}
			}
		}
	})

	t.Run("secrets", func(t *testing.T) {
		refs := slices.Clone(secretRefs)
		var whole []string // Secrets read whole, as envFrom
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				whole = append(whole, e.SecretRef.Name)
			}
		}
		// Every key mounted is one the operator must make, read by the
		// agent or not (client.properties is for operators).
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil {
				for _, it := range v.Secret.Items {
					refs = append(refs, secretRef{v.Secret.SecretName, it.Key})
				}
			}
		}
		checkSecretsDocumented(t, root, refs, whole)
	})

	t.Run("certificate", func(t *testing.T) {
		i := slices.IndexFunc(secretRefs, func(r secretRef) bool { return r.key == "tls.crt" })
		if i < 0 {
			t.Skip("the agents read no certificate from a Secret")
		}
		// Every advertised listener's host, with a pod's sample fields;
		// the client Services' names; the preStop hook's host.
		raw, _ := splitArgs(c.Args[1:])
		env := c.envVars()
		var hosts []string
		for _, adv := range advertisedListeners(raw) {
			host, _, _ := net.SplitHostPort(envReference.ReplaceAllStringFunc(adv, func(ref string) string {
				field, _ := strings.CutPrefix(env[envReference.FindStringSubmatch(ref)[1]], "fieldRef:")
				return sampleFields[field]
			}))
			hosts = append(hosts, host)
		}
		for _, d := range ofKind(docs, "v1", "Service") {
			var s service
			d.decode(t, &s)
			if s.Spec.ClusterIP != "None" {
				hosts = append(hosts, s.Metadata.Name+"."+kust.Namespace+".svc", s.Metadata.Name+"."+kust.Namespace+".svc.cluster.local")
			}
		}
		if c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Exec != nil && len(c.Lifecycle.PreStop.Exec.Command) > 3 {
			hook, _ := splitArgs(c.Lifecycle.PreStop.Exec.Command[3:])
			if host, _, err := net.SplitHostPort(hook["http"]); err == nil {
				hosts = append(hosts, host)
			}
		}
		checkCertificateNames(t, dir, secretRefs[i].secret, hosts)
	})

	t.Run("security", func(t *testing.T) {
		checkSecurity(t, c, pod.Spec, flags, listeners, secretRefs, samples)
	})

	t.Run("storage", func(t *testing.T) {
		dataDir := flags.Lookup("data-dir").Value.String()
		var claims []string
		for _, v := range sts.Spec.VolumeClaimTemplates {
			claims = append(claims, v.Metadata.Name)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		}) bool {
			return path.Clean(m.MountPath) == path.Clean(dataDir) && slices.Contains(claims, m.Name)
		}) {
			t.Errorf("--data-dir %s is not the mount point of a volumeClaimTemplate (%q)", dataDir, claims)
		}
		if store := flags.Lookup("store").Value.String(); strings.HasPrefix(store, "s3://") {
			if !slices.ContainsFunc(c.EnvFrom, func(e struct {
				SecretRef *struct {
					Name string `yaml:"name"`
				} `yaml:"secretRef"`
			}) bool {
				return e.SecretRef != nil && e.SecretRef.Name != ""
			}) {
				t.Errorf("--store %s: the container takes no credentials from a Secret (envFrom secretRef)", store)
			}
		} else {
			t.Errorf("--store %q: agents of one cluster share an S3 or MinIO bucket (s3://...)", store)
		}
	})

	t.Run("services", func(t *testing.T) {
		var headless, clients []service
		for _, d := range ofKind(docs, "v1", "Service") {
			var s service
			d.decode(t, &s)
			if !selects(s.Spec.Selector, pod.Metadata.Labels) {
				t.Errorf("Service %s selects %v, not the agents %v", s.Metadata.Name, s.Spec.Selector, pod.Metadata.Labels)
			}
			for _, p := range s.Spec.Ports {
				target, err := c.resolvePort(p.TargetPort)
				if err != nil {
					t.Errorf("Service %s port %s: targetPort: %v", s.Metadata.Name, p.Name, err)
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = "TCP"
				}
				if !slices.ContainsFunc(c.Ports, func(cp struct {
					Name          string `yaml:"name"`
					ContainerPort int    `yaml:"containerPort"`
					Protocol      string `yaml:"protocol"`
				}) bool {
					return cp.ContainerPort == target && (cp.Protocol == proto || cp.Protocol == "" && proto == "TCP")
				}) {
					t.Errorf("Service %s port %s: no %s container port %d", s.Metadata.Name, p.Name, proto, target)
				}
			}
			if s.Spec.ClusterIP == "None" {
				headless = append(headless, s)
			} else {
				clients = append(clients, s)
			}
		}
		if len(headless) != 1 || headless[0].Metadata.Name != sts.Spec.ServiceName {
			t.Fatalf("want one headless Service, the StatefulSet's serviceName %q; found %d", sts.Spec.ServiceName, len(headless))
		}
		if !headless[0].Spec.PublishNotReadyAddresses {
			t.Error("the headless Service must publish pods before they are ready: agents join by gossip before they serve")
		}
		servesPort := func(s service, port int, proto string) bool {
			for _, p := range s.Spec.Ports {
				target, err := c.resolvePort(p.TargetPort)
				if err == nil && target == port && (p.Protocol == proto || p.Protocol == "" && proto == "TCP") {
					return true
				}
			}
			return false
		}
		if !servesPort(headless[0], gossipPort, "TCP") || !servesPort(headless[0], gossipPort, "UDP") {
			t.Errorf("headless Service %s lacks gossip port %d on TCP and UDP", headless[0].Metadata.Name, gossipPort)
		}
		for _, p := range clientPorts {
			if !slices.ContainsFunc(clients, func(s service) bool { return servesPort(s, p, "TCP") }) {
				t.Errorf("no client Service forwards to the Kafka client listener's port %d", p)
			}
		}
		for _, s := range clients {
			if servesPort(s, httpPort, "TCP") {
				t.Errorf("client Service %s forwards to the HTTP port %d, which is for operators and Prometheus", s.Metadata.Name, httpPort)
			}
			if !slices.Contains(clientPorts, interAgentPort) && servesPort(s, interAgentPort, "TCP") {
				t.Errorf("client Service %s forwards to the inter-agent listener's port %d, which is for the agents", s.Metadata.Name, interAgentPort)
			}
		}
	})

	t.Run("networkpolicy", func(t *testing.T) {
		var np networkPolicy
		only(t, docs, "networking.k8s.io/v1", "NetworkPolicy").decode(t, &np)
		checkNetworkPolicy(t, np, c, pod.Metadata.Labels, clientPorts, interAgentPort, httpPort, gossipPort)
	})

	t.Run("probes", func(t *testing.T) {
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Fatal("readinessProbe: want an httpGet of /readyz")
		}
		for kind, p := range map[string]*probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if got, err := c.resolvePort(p.HTTPGet.Port); err != nil || got != httpPort {
				t.Errorf("%sProbe port: %d (%v); the HTTP server (--http-addr) is on %d", kind, got, err, httpPort)
			}
		}
		// TestMonitoringMatchesAgent asks a real agent for each path.
	})

	t.Run("drain", func(t *testing.T) {
		checkPreStop(t, root, c, pod.Spec, flags, httpPort)
		runPreStop(t, c, pod.Spec, flags, samples, listeners)
	})

	t.Run("disruption-and-scaling", func(t *testing.T) {
		if !selects(pdb.Spec.Selector.MatchLabels, pod.Metadata.Labels) {
			t.Errorf("PodDisruptionBudget selects %v, not the agents", pdb.Spec.Selector.MatchLabels)
		}
		if pdb.Spec.MaxUnavailable.Value != "1" {
			t.Error("PodDisruptionBudget: want maxUnavailable 1, one draining agent at a time")
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name != sts.Metadata.Name {
			t.Errorf("HorizontalPodAutoscaler scales %s %s %s, not the StatefulSet %s", ref.APIVersion, ref.Kind, ref.Name, sts.Metadata.Name)
		}
		for _, m := range hpa.Spec.Metrics {
			if m.Type == "Resource" && m.Resource != nil && c.Resources.Requests[m.Resource.Name] == "" {
				t.Errorf("the autoscaler scales on %s, which the agent container does not request", m.Resource.Name)
			}
			if m.Type != "Pods" || m.Pods == nil {
				continue
			}
			// TestMonitoringMatchesAgent checks that agents export the
			// metric and that prometheus-adapter.yaml serves it; here,
			// that these agents are started so as to export it.
			if flag, ok := metricFlags[m.Pods.Metric.Name]; ok {
				if v := flags.Lookup(flag).Value.String(); v == flags.Lookup(flag).DefValue {
					t.Errorf("the autoscaler scales on %s, which an agent exports only with --%s; the manifests leave it at %s", m.Pods.Metric.Name, flag, v)
				}
			}
		}
		// Placement keeps a partition's replication factor only while
		// enough agents are active: draining one of three shrinks RF-3
		// partitions to two for good. So never fewer than four.
		if hpa.Spec.MinReplicas < 4 || sts.Spec.Replicas < hpa.Spec.MinReplicas || sts.Spec.Replicas > hpa.Spec.MaxReplicas {
			t.Errorf("replicas %d, autoscaler %d..%d: want at least 4 agents (replication factor 3, plus one to drain), within the autoscaler's range",
				sts.Spec.Replicas, hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
	})

	t.Run("kustomize", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl is not on the PATH")
		}
		out, err := exec.Command(kubectl, "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", kubernetesDir, err)
		}
		n := 0
		dec := yaml.NewDecoder(strings.NewReader(string(out)))
		for {
			var obj struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Namespace string `yaml:"namespace"`
				} `yaml:"metadata"`
			}
			if err := dec.Decode(&obj); err != nil {
				break
			}
			n++
			if obj.Kind != "Namespace" && obj.Metadata.Namespace != kust.Namespace {
				t.Errorf("rendered %s is in namespace %q, not %q", obj.Kind, obj.Metadata.Namespace, kust.Namespace)
			}
		}
		if n != len(docs) {
			t.Errorf("kubectl kustomize renders %d objects; the files hold %d", n, len(docs))
		}
	})
}

// checkAgentFlags checks the agent container's flags and its --config file
// against `strata agent --help`, parses and validates them as the agent
// would, and returns the resulting flag set (defaults included).
//
// Settings come, as cmd/strata layers them, from the --config file, then
// STRATA_<FLAG> variables of the container's env, then the arguments. A
// value taken from a Secret (a file under a Secret's mount, a variable
// from a secretKeyRef) is replaced by a sample of samples; the Secrets so
// read are returned, for checkSecretsDocumented.
func checkAgentFlags(t *testing.T, c container, cm configMap, pod podSpec, samples *secretSamples) (*pflag.FlagSet, []secretRef) {
	t.Helper()
	known := helpFlags(t, "agent")
	args, err := splitArgs(c.Args[1:])
	if err != nil {
		t.Fatalf("container %s: %v", c.Name, err)
	}
	settings := map[string]string{}
	if file := args["config"]; file != "" {
		for name, value := range configFileSettings(t, file, c, cm, pod) {
			if name == "config" {
				t.Errorf("%s sets config", file)
			}
			settings[name] = value
		}
	}
	env := c.envVars()
	var refs []secretRef
	for v, src := range env {
		flag, ok := strings.CutPrefix(v, "STRATA_")
		if !ok {
			continue
		}
		name := strings.ToLower(strings.ReplaceAll(flag, "_", "-"))
		if secret, ok := strings.CutPrefix(src, "secretKeyRef:"); ok {
			sec, key, _ := strings.Cut(secret, "/")
			refs = append(refs, secretRef{sec, key})
			if src, ok = samples.values[key]; !ok {
				t.Errorf("env %s from Secret %s: key %q has no sample value in the test", v, sec, key)
			}
		}
		settings[name] = src
	}
	for name, value := range args { // the command line wins
		settings[name] = value
	}
	for name, value := range settings {
		if ref, ok := secretFile(c, pod, value); ok {
			refs = append(refs, ref)
			settings[name] = samples.sampleFile(t, ref)
		} else if path.IsAbs(value) && !slices.ContainsFunc(c.VolumeMounts, func(m struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		}) bool {
			return value == path.Clean(m.MountPath) || strings.HasPrefix(value, path.Clean(m.MountPath)+"/")
		}) {
			t.Errorf("--%s=%s: no volume is mounted there; the image's root filesystem has no such file", name, value)
		}
	}

	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		value := settings[name]
		if !known[name] {
			t.Errorf("--%s is not a flag of `strata agent`", name)
			continue
		}
		value = envReference.ReplaceAllStringFunc(value, func(ref string) string {
			v := envReference.FindStringSubmatch(ref)[1]
			src, ok := env[v]
			if !ok {
				t.Errorf("--%s=%s: $(%s) is not in the container's env", name, settings[name], v)
				return ref
			}
			if field, ok := strings.CutPrefix(src, "fieldRef:"); ok {
				sample, ok := sampleFields[field]
				if !ok {
					t.Errorf("--%s: $(%s) comes from %s, which the test has no sample value for", name, v, field)
				}
				return sample
			}
			return src
		})
		if allowed, ok := cmdOnlyFlags[name]; ok {
			if allowed != nil && !slices.Contains(allowed, value) {
				t.Errorf("--%s=%s: want one of %q", name, value, allowed)
			}
			continue
		}
		if fs.Lookup(name) == nil {
			t.Errorf("--%s: listed by --help but neither agent.Config nor cmdOnlyFlags has it; update cmdOnlyFlags", name)
			continue
		}
		if err := fs.Set(name, value); err != nil {
			t.Errorf("--%s=%s: %v", name, value, err)
		}
	}
	cfg.ApplyFlags(fs)
	if err := cfg.Validate(); err != nil {
		t.Errorf("the manifests' agent settings do not validate: %v", err)
	}
	return fs, refs
}

// configFileSettings reads the --config file out of the ConfigMap mounted
// at its directory, as a flat map of flag names to values.
func configFileSettings(t *testing.T, file string, c container, cm configMap, pod podSpec) map[string]string {
	t.Helper()
	var mounted string
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == path.Dir(file) {
			mounted = m.Name
		}
	}
	var fromConfigMap bool
	for _, v := range pod.Volumes {
		if v.Name == mounted && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
			fromConfigMap = true
		}
	}
	data, ok := cm.Data[path.Base(file)]
	if !fromConfigMap || !ok {
		t.Fatalf("--config=%s: not a key of ConfigMap %s mounted at %s", file, cm.Metadata.Name, path.Dir(file))
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal([]byte(data), &raw); err != nil {
		t.Fatalf("ConfigMap %s %s: %v", cm.Metadata.Name, path.Base(file), err)
	}
	out := map[string]string{}
	for name, n := range raw {
		if n.Kind != yaml.ScalarNode {
			t.Errorf("ConfigMap %s: %s: want a single value, as the agent does", cm.Metadata.Name, name)
		}
		out[name] = n.Value
	}
	return out
}

// checkPreStop: the hook drains the agent through its own HTTP port with
// the image's binary, and the pod's grace period outlasts the drain.
func checkPreStop(t *testing.T, root string, c container, pod podSpec, flags *pflag.FlagSet, httpPort int) {
	t.Helper()
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"`).FindSubmatch(dockerfile)
	uid := regexp.MustCompile(`adduser [^\n]*-u (\d+)`).FindSubmatch(dockerfile)
	if entry == nil || uid == nil {
		t.Fatal("Dockerfile: no ENTRYPOINT [\"...\"] or adduser -u UID; did it change?")
	}
	if want, _ := strconv.Atoi(string(uid[1])); pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser != want {
		t.Errorf("runAsUser %d is not the image's user %d", *pod.SecurityContext.RunAsUser, want)
	}
	if pod.SecurityContext.FSGroup == nil {
		t.Error("no fsGroup: the data volume would not be writable by the image's non-root user")
	}

	hook := c.Lifecycle.PreStop
	if hook == nil || hook.Exec == nil {
		t.Fatal("no preStop exec hook")
	}
	cmd := hook.Exec.Command
	if len(cmd) < 3 || cmd[0] != string(entry[1]) || cmd[1] != "agent" || cmd[2] != "drain" {
		t.Fatalf("preStop %q: want %s agent drain ...", cmd, entry[1])
	}
	known := helpFlags(t, "agent", "drain")
	drain, err := splitArgs(cmd[3:])
	if err != nil {
		t.Fatalf("preStop: %v", err)
	}
	for name := range drain {
		if !known[name] {
			t.Errorf("preStop: --%s is not a flag of `strata agent drain`", name)
		}
	}
	host, p, err := net.SplitHostPort(drain["http"])
	if err != nil || p != strconv.Itoa(httpPort) || (host != "127.0.0.1" && host != "localhost") {
		t.Errorf("preStop --http=%s: want the agent's own HTTP port, 127.0.0.1:%d", drain["http"], httpPort)
	}
	if drain["wait"] != "true" {
		t.Error("preStop: without --wait the hook returns at once and the kubelet sends SIGTERM while the agent drains")
	}
	if drain["force"] != "true" {
		t.Error("preStop: without --force a drain that cannot finish leaves the agent running until the kubelet kills it, without uploading what only it holds")
	}
	wait, err := time.ParseDuration(drain["timeout"])
	if err != nil {
		t.Errorf("preStop --timeout=%q: want an explicit duration: %v", drain["timeout"], err)
	}

	duration := func(flag string) time.Duration {
		d, err := time.ParseDuration(flags.Lookup(flag).Value.String())
		if err != nil {
			t.Fatalf("--%s: %v", flag, err)
		}
		return d
	}
	drainTimeout, shutdownTimeout := duration("drain-timeout"), duration("shutdown-timeout")
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds: Kubernetes' 30 s default kills a draining agent")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	stop := drainTimeout + soleCopyUploadLimit + shutdownTimeout
	if grace <= stop || wait < stop || grace < wait {
		t.Errorf("terminationGracePeriodSeconds %v and the hook's --timeout %v: want both above --drain-timeout %v + the sole-copy upload's %v + --shutdown-timeout %v, and the grace period at least the hook's wait",
			grace, wait, drainTimeout, soleCopyUploadLimit, shutdownTimeout)
	}
	if drainTimeout == 0 {
		t.Error("--drain-timeout 0: the agent would stop without draining")
	}
}
