package deploycheck

import (
	"fmt"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

type networkPolicy struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		PodSelector labelSelector `yaml:"podSelector"`
		PolicyTypes []string      `yaml:"policyTypes"`
		Ingress     []struct {
			From []struct {
				PodSelector       *labelSelector `yaml:"podSelector"`
				NamespaceSelector *labelSelector `yaml:"namespaceSelector"`
				IPBlock           *yaml.Node     `yaml:"ipBlock"`
			} `yaml:"from"`
			Ports []struct {
				Port     yaml.Node `yaml:"port"`
				Protocol string    `yaml:"protocol"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	} `yaml:"spec"`
}

// peer is who an ingress rule admits: "any" (no from), "agents" (a pod
// selector choosing the agent pods, in their namespace), "namespace"
// (a namespace selector with labels), or "other".
func (np networkPolicy) peers(i int, agentLabels map[string]string) []string {
	rule := np.Spec.Ingress[i]
	if len(rule.From) == 0 {
		return []string{"any"}
	}
	var out []string
	for _, f := range rule.From {
		switch {
		case f.IPBlock != nil:
			out = append(out, "other")
		case f.PodSelector != nil && f.NamespaceSelector == nil && len(f.PodSelector.MatchLabels) > 0 && selects(f.PodSelector.MatchLabels, agentLabels):
			out = append(out, "agents")
		case f.NamespaceSelector != nil && f.PodSelector == nil && len(f.NamespaceSelector.MatchLabels) > 0:
			out = append(out, "namespace")
		default:
			out = append(out, "other")
		}
	}
	return out
}

// checkNetworkPolicy: the policy applies to the agent pods and admits
// Kafka's client listeners from clients, the inter-agent listener, gossip
// and HTTP between agents, HTTP from a labelled monitoring namespace, and
// nothing else; its ports are the ones the flags listen on.
func checkNetworkPolicy(t *testing.T, np networkPolicy, c container, agentLabels map[string]string, clientPorts []int, interAgentPort, httpPort, gossipPort int) {
	t.Helper()
	if !selects(np.Spec.PodSelector.MatchLabels, agentLabels) || len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Errorf("NetworkPolicy %s selects %v, not the agents %v", np.Metadata.Name, np.Spec.PodSelector.MatchLabels, agentLabels)
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Ingress") {
		t.Errorf("NetworkPolicy %s policyTypes %v: want Ingress", np.Metadata.Name, np.Spec.PolicyTypes)
	}
	// admitted[peer] is the set of "port/protocol" the peer may reach.
	admitted := map[string]map[string]bool{}
	for i, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("NetworkPolicy %s ingress %d admits every port", np.Metadata.Name, i)
			continue
		}
		for _, peer := range np.peers(i, agentLabels) {
			for _, p := range rule.Ports {
				port, err := c.resolvePort(p.Port)
				if err != nil {
					t.Errorf("NetworkPolicy %s ingress %d: %v", np.Metadata.Name, i, err)
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = "TCP"
				}
				if admitted[peer] == nil {
					admitted[peer] = map[string]bool{}
				}
				admitted[peer][fmt.Sprintf("%d/%s", port, proto)] = true
			}
		}
	}
	want := map[string]map[string]bool{
		"any":       {},
		"agents":    {fmt.Sprintf("%d/TCP", gossipPort): true, fmt.Sprintf("%d/UDP", gossipPort): true, fmt.Sprintf("%d/TCP", httpPort): true, fmt.Sprintf("%d/TCP", interAgentPort): true},
		"namespace": {fmt.Sprintf("%d/TCP", httpPort): true},
	}
	clients := map[string]bool{}
	for _, p := range clientPorts {
		want["any"][fmt.Sprintf("%d/TCP", p)] = true
		clients[fmt.Sprintf("%d/TCP", p)] = true
	}
	for peer, ports := range want {
		for p := range ports {
			if !admitted[peer][p] {
				t.Errorf("NetworkPolicy %s: %s may not reach %s (admitted %v)", np.Metadata.Name, peer, p, admitted)
			}
		}
	}
	for peer, ports := range admitted {
		for p := range ports {
			// Every pod reaching Kafka may be narrowed further by the
			// operator; nothing beyond the wanted ports may be opened.
			if !want[peer][p] && !(peer == "agents" && clients[p]) {
				t.Errorf("NetworkPolicy %s: %s may reach %s, which is not for it", np.Metadata.Name, peer, p)
			}
		}
	}
}
