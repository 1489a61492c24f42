package deploycheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The parts of Kubernetes objects the tests read. Fields not listed are
// ignored: kubectl and the API server check the schema, these tests check
// what the schema cannot, that the objects agree with the agent.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type statefulSet struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		ServiceName string        `yaml:"serviceName"`
		Replicas    int           `yaml:"replicas"`
		Selector    labelSelector `yaml:"selector"`
		Template    struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata objectMeta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsUser *int `yaml:"runAsUser"`
		FSGroup   *int `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []volume    `yaml:"volumes"`
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
		// Items, when given, are the only keys mounted, each at its path.
		Items []struct {
			Key  string `yaml:"key"`
			Path string `yaml:"path"`
		} `yaml:"items"`
	} `yaml:"secret"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	StartupProbe   *probe `yaml:"startupProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Scheme string    `yaml:"scheme"` // HTTP when empty
		Path   string    `yaml:"path"`
		Port   yaml.Node `yaml:"port"` // a number or a port name
	} `yaml:"httpGet"`
}

type service struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
			Protocol   string    `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podDisruptionBudget struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		MaxUnavailable yaml.Node     `yaml:"maxUnavailable"`
		MinAvailable   yaml.Node     `yaml:"minAvailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type horizontalPodAutoscaler struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		ScaleTargetRef struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Name       string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
		Metrics     []struct {
			Type     string `yaml:"type"`
			Resource *struct {
				Name string `yaml:"name"`
			} `yaml:"resource"`
			// Pods is a metric of each pod from the custom metrics API
			// (deploy/monitoring/prometheus-adapter.yaml serves it).
			Pods *struct {
				Metric struct {
					Name string `yaml:"name"`
				} `yaml:"metric"`
				Target struct {
					Type         string `yaml:"type"`
					AverageValue string `yaml:"averageValue"`
				} `yaml:"target"`
			} `yaml:"pods"`
		} `yaml:"metrics"`
	} `yaml:"spec"`
}

type configMap struct {
	Metadata objectMeta        `yaml:"metadata"`
	Data     map[string]string `yaml:"data"`
}

type kustomization struct {
	Namespace string   `yaml:"namespace"`
	Resources []string `yaml:"resources"`
	Images    []struct {
		Name string `yaml:"name"`
	} `yaml:"images"`
}

// document is one YAML document of a manifest file.
type document struct {
	file       string
	apiVersion string
	kind       string
	name       string
	node       *yaml.Node
}

func (d document) String() string { return fmt.Sprintf("%s %s (%s)", d.kind, d.name, d.file) }

// decode decodes the document into v, failing t on error.
func (d document) decode(t *testing.T, v any) {
	t.Helper()
	if err := d.node.Decode(v); err != nil {
		t.Fatalf("%s: %v", d, err)
	}
}

// readManifests parses every document of every .yaml file in dir except
// kustomization.yaml, and returns them with the file names it read.
func readManifests(t *testing.T, dir string) ([]document, []string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []document
	var files []string
	for _, path := range paths {
		file := filepath.Base(path)
		if file == "kustomization.yaml" {
			continue
		}
		files = append(files, file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var head struct {
				APIVersion string     `yaml:"apiVersion"`
				Kind       string     `yaml:"kind"`
				Metadata   objectMeta `yaml:"metadata"`
			}
			if err := n.Decode(&head); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", file)
			}
			docs = append(docs, document{file: file, apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, node: &n})
		}
	}
	return docs, files
}

// ofKind returns the documents of one apiVersion and kind.
func ofKind(docs []document, apiVersion, kind string) []document {
	var out []document
	for _, d := range docs {
		if d.kind == kind && d.apiVersion == apiVersion {
			out = append(out, d)
		}
	}
	return out
}

// only returns the single document of a kind, failing t otherwise.
func only(t *testing.T, docs []document, apiVersion, kind string) document {
	t.Helper()
	found := ofKind(docs, apiVersion, kind)
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %s, found %d", apiVersion, kind, len(found))
	}
	return found[0]
}

// selects reports whether a selector picks pods with these labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// readKustomization checks that kustomization.yaml lists exactly the
// manifest files, and returns it.
func readKustomization(t *testing.T, dir string, files []string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, files) {
		t.Errorf("kustomization.yaml resources %q; the directory holds %q", got, files)
	}
	return k
}

// resolvePort returns the container port of c that a probe port or a
// Service targetPort names: by number, or by the name of one of c's ports.
func (c container) resolvePort(n yaml.Node) (int, error) {
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return 0, errors.New("no port")
	}
	var number int
	if _, err := fmt.Sscan(n.Value, &number); err == nil && n.Tag == "!!int" {
		for _, p := range c.Ports {
			if p.ContainerPort == number {
				return number, nil
			}
		}
		return 0, fmt.Errorf("port %d is not a container port", number)
	}
	for _, p := range c.Ports {
		if p.Name == n.Value {
			return p.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", n.Value)
}

// namedPort returns the container port with this name and protocol
// (empty means TCP).
func (c container) namedPort(name, protocol string) (int, bool) {
	for _, p := range c.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		if p.Name == name && proto == protocol {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// envVars returns the names of c's env entries and, for those taken from
// the pod's fields, the field path.
func (c container) envVars() map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			out[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.Name] = "secretKeyRef:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return out
}

// probePaths returns the HTTP paths of c's probes, by kind.
func (c container) probePaths() map[string]string {
	out := map[string]string{}
	for kind, p := range map[string]*probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if p != nil && p.HTTPGet != nil {
			out[kind] = p.HTTPGet.Path
		}
	}
	return out
}

// agentContainer returns the StatefulSet's container that runs `agent`.
func agentContainer(t *testing.T, s statefulSet) container {
	t.Helper()
	for _, c := range s.Spec.Template.Spec.Containers {
		if len(c.Args) > 0 && c.Args[0] == "agent" && len(c.Command) == 0 {
			return c
		}
	}
	t.Fatalf("StatefulSet %s has no container whose args start with `agent` (and that keeps the image's entrypoint)", s.Metadata.Name)
	return container{}
}

// kubernetesDir is where the manifests live, from the repository root.
const kubernetesDir = "deploy/kubernetes"

// manifestProbePaths returns the probe paths of the agent container, for
// the live test to ask a real agent.
func manifestProbePaths(t *testing.T, root string) []string {
	t.Helper()
	docs, _ := readManifests(t, filepath.Join(root, kubernetesDir))
	var s statefulSet
	only(t, docs, "apps/v1", "StatefulSet").decode(t, &s)
	var paths []string
	for _, p := range agentContainer(t, s).probePaths() {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// manifestAutoscaler returns the manifests' HorizontalPodAutoscaler, for
// the live test to check its metrics against real agents.
func manifestAutoscaler(t *testing.T, root string) horizontalPodAutoscaler {
	t.Helper()
	docs, _ := readManifests(t, filepath.Join(root, kubernetesDir))
	var hpa horizontalPodAutoscaler
	only(t, docs, "autoscaling/v2", "HorizontalPodAutoscaler").decode(t, &hpa)
	return hpa
}

// splitArgs turns --name=value arguments into a map, as clustertopo does:
// every flag in the manifests is written that way; a bare --name is a
// boolean set to true.
func splitArgs(args []string) (map[string]string, error) {
	flags := map[string]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("argument %q: want --name=value", a)
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			value = "true"
		}
		if _, dup := flags[name]; dup {
			return nil, fmt.Errorf("--%s is given twice", name)
		}
		flags[name] = value
	}
	return flags, nil
}
