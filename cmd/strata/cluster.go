package main

// `strata cluster status` shows the agents and, per agent, the replicas and
// leaderships it holds and the partitions being moved, from Metadata and
// ListPartitionReassignments, and with --http each agent's load
// (clusterload.go). `strata reassign` moves partitions with
// AlterPartitionReassignments: a plan in kafka-reassign-partitions' JSON,
// then execute, verify or cancel. `strata agent drain` asks an agent to
// drain (POST /v1/drain) and, with --wait, waits until it has stopped.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/agent/placement"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Show the agents and what each holds"}
	var cf clientFlags
	var lf loadFlags
	status := &cobra.Command{
		Use:   "status",
		Short: "Agents, replicas, leaderships and (with --http) load per agent, and partition moves in flight",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var loads map[int32]agentLoad
			if lf.addrs != "" {
				h, err := lf.open(&cf)
				if err != nil {
					return err
				}
				if loads, err = fetchAgentLoads(cmd.Context(), h, lf.addrs, cf.timeout); err != nil {
					return err
				}
			}
			return runAdmin(cmd, &cf, func(ctx context.Context, adm *kadm.Client) error {
				md, moves, err := metadataAndMoves(ctx, adm)
				if err == nil {
					printClusterStatus(cmd, md, moves, loads)
				}
				return err
			})
		},
	}
	cf.register(status.Flags())
	status.Flags().StringVar(&lf.addrs, "http", "", "Comma-separated HTTP addresses (--http-addr) of the agents whose load to show: bytes in and out per second (moving averages over about 20 s) and local log bytes, read from their /metrics. Empty shows no load.")
	status.Flags().BoolVar(&lf.tls, "http-tls", false, "Call those agents over HTTPS (their --http-tls), with --tls-ca-file, --tls-cert-file and --tls-key-file.")
	status.Flags().StringVar(&lf.tokenFile, "http-token-file", "", "The agents' --http-token-file; its first token authorizes the requests.")
	cmd.AddCommand(status)
	return cmd
}

// metadataAndMoves is the cluster's Metadata and its moves in flight.
func metadataAndMoves(ctx context.Context, adm *kadm.Client) (kadm.Metadata, kadm.ListPartitionReassignmentsResponses, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return md, nil, err
	}
	moves, err := adm.ListPartitionReassignments(ctx, md.Topics.TopicsSet())
	return md, moves, err
}

// printClusterStatus prints the agents, and, when loads is not nil, each
// one's load ("-" for an agent whose HTTP address was not given).
func printClusterStatus(cmd *cobra.Command, md kadm.Metadata, moves kadm.ListPartitionReassignmentsResponses, loads map[int32]agentLoad) {
	replicas, leaders := map[int32]int{}, map[int32]int{}
	leaderless := 0
	underReplicated := 0
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			if p.Leader >= 0 {
				leaders[p.Leader]++
			} else {
				leaderless++
			}
			if len(p.ISR) < len(p.Replicas) {
				underReplicated++
			}
		}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	header := "AGENT\tADDRESS\tRACK\tREPLICAS\tLEADERS"
	if loads != nil {
		header += "\tIN/S\tOUT/S\tLOCAL"
	}
	fmt.Fprintln(w, header)
	for _, b := range md.Brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(w, "%d\t%s:%d\t%s\t%d\t%d", b.NodeID, b.Host, b.Port, rack, replicas[b.NodeID], leaders[b.NodeID])
		if loads != nil {
			if l, ok := loads[b.NodeID]; ok {
				fmt.Fprintf(w, "\t%s\t%s\t%s", formatBytes(l.in), formatBytes(l.out), formatBytes(l.local))
			} else {
				fmt.Fprint(w, "\t-\t-\t-")
			}
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	fmt.Fprintf(cmd.OutOrStdout(), "\npartitions: leaderless %d, under-replicated %d, moving %d\n", leaderless, underReplicated, len(moves.Sorted()))
	for _, m := range moves.Sorted() {
		fmt.Fprintf(cmd.OutOrStdout(), "  %s-%d replicas %v adding %v removing %v\n", m.Topic, m.Partition, m.Replicas, m.AddingReplicas, m.RemovingReplicas)
	}
}

// reassignPlan is kafka-reassign-partitions' JSON.
type reassignPlan struct {
	Version    int             `json:"version"`
	Partitions []planPartition `json:"partitions"`
}

type planPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

func readPlan(path string) (reassignPlan, error) {
	var plan reassignPlan
	b, err := os.ReadFile(path)
	if err != nil {
		return plan, err
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		return plan, fmt.Errorf("reassign: %s: %w", path, err)
	}
	if len(plan.Partitions) == 0 {
		return plan, fmt.Errorf("reassign: %s lists no partitions", path)
	}
	return plan, nil
}

func newReassignCmd() *cobra.Command {
	var cf clientFlags
	var file string
	cmd := &cobra.Command{
		Use:   "reassign execute|verify|cancel --plan FILE",
		Short: "Move partitions to other agents (kafka-reassign-partitions' JSON plan)",
		Long: `Move partitions with AlterPartitionReassignments. FILE is
{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}.
execute starts the moves; verify reports each as done, moving or differing;
cancel stops the moves of the listed partitions. "strata reassign generate"
writes a plan.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"execute", "verify", "cancel"},
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := readPlan(file)
			if err != nil {
				return err
			}
			return runAdmin(cmd, &cf, func(ctx context.Context, adm *kadm.Client) error {
				return runReassign(ctx, cmd, adm, args[0], plan)
			})
		},
	}
	cmd.Flags().StringVar(&file, "plan", "", "The JSON plan.")
	cmd.MarkFlagRequired("plan")
	cf.register(cmd.Flags())
	cmd.AddCommand(newReassignGenerateCmd())
	return cmd
}

// runReassign carries out one action of a plan.
func runReassign(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, action string, plan reassignPlan) error {
	switch action {
	case "execute", "cancel":
		var req kadm.AlterPartitionAssignmentsReq
		for _, p := range plan.Partitions {
			replicas := p.Replicas
			if action == "cancel" {
				replicas = nil
			}
			req.Assign(p.Topic, p.Partition, replicas)
		}
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		failed := false
		for _, ps := range resp {
			for _, r := range ps {
				if r.Err != nil {
					failed = true
					fmt.Fprintf(cmd.ErrOrStderr(), "%s-%d: %v %s\n", r.Topic, r.Partition, r.Err, r.ErrMessage)
				} else {
					done := map[string]string{"execute": "moving", "cancel": "cancelled"}[action]
					fmt.Fprintf(cmd.OutOrStdout(), "%s-%d: %s\n", r.Topic, r.Partition, done)
				}
			}
		}
		if failed {
			return errSomeFailed
		}
		return nil
	case "verify":
		return verifyPlan(ctx, cmd, adm, plan)
	}
	return fmt.Errorf("reassign: unknown action %q; want execute, verify or cancel", action)
}

// newReassignGenerateCmd proposes a plan that spreads the named topics over
// the named agents with the placement the balancer uses (placement.Place:
// even replicas and preferred leaders, racks apart, fewest moves).
func newReassignGenerateCmd() *cobra.Command {
	var cf clientFlags
	var agents []int32
	var topicNames []string
	cmd := &cobra.Command{
		Use:   "generate --topics T1,T2 --agents 1,2,3",
		Short: "Print a plan that spreads topics over agents (kafka-reassign-partitions --generate)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAdmin(cmd, &cf, func(ctx context.Context, adm *kadm.Client) error {
				return generatePlan(ctx, cmd, adm, topicNames, agents)
			})
		},
	}
	cmd.Flags().StringSliceVar(&topicNames, "topics", nil, "Topics to spread.")
	cmd.Flags().Int32SliceVar(&agents, "agents", nil, "Agent ids to spread them over.")
	cmd.MarkFlagRequired("topics")
	cmd.MarkFlagRequired("agents")
	cf.register(cmd.Flags())
	return cmd
}

// generatePlan prints the plan that places topics on agents.
func generatePlan(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, topicNames []string, agents []int32) error {
	md, err := adm.Metadata(ctx, topicNames...)
	if err != nil {
		return err
	}
	racks := map[int32]string{}
	for _, b := range md.Brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	var place []placement.Agent
	for _, id := range agents {
		place = append(place, placement.Agent{ID: id, Rack: racks[id]})
	}
	var parts []placement.Partition
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return fmt.Errorf("reassign: topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			parts = append(parts, placement.Partition{Topic: t.Topic, Index: p.Partition, Replicas: p.Replicas})
		}
	}
	targets := placement.Place(place, parts)
	var plan reassignPlan
	plan.Version = 1
	for i, p := range parts {
		plan.Partitions = append(plan.Partitions, planPartition{Topic: p.Topic, Partition: p.Index, Replicas: targets[i]})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(plan)
}

func verifyPlan(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, plan reassignPlan) error {
	md, moves, err := metadataAndMoves(ctx, adm)
	if err != nil {
		return err
	}
	pending := false
	for _, p := range plan.Partitions {
		state := "differs"
		if _, moving := moves[p.Topic][p.Partition]; moving {
			state, pending = "moving", true
		} else if t, ok := md.Topics[p.Topic]; ok && slices.Equal(t.Partitions[p.Partition].Replicas, p.Replicas) {
			state = "done"
		} else {
			pending = true
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s-%d: %s\n", p.Topic, p.Partition, state)
	}
	if pending {
		return errors.New("reassign: not every partition is where the plan puts it")
	}
	return nil
}

// newAgentDrainCmd is `strata agent drain [ID]`.
func newAgentDrainCmd() *cobra.Command {
	var addr string
	var wait, force bool
	var timeout, limit time.Duration
	var httpFlags agentHTTPFlags
	cmd := &cobra.Command{
		Use:   "drain [AGENT-ID]",
		Short: "Move an agent's leaderships and replicas to the others, then stop it",
		Long: "Drains the agent at --http, or agent AGENT-ID through the agent at --http. Without --force,\n" +
			"a drain that would leave partitions under-replicated is refused, and one that does not\n" +
			"finish within --drain-timeout leaves the agent running; with --force the agent stops at\n" +
			"the limit, after uploading what only it holds.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			who := "agent at " + addr
			if len(args) == 1 {
				if _, err := strconv.ParseInt(args[0], 10, 32); err != nil {
					return fmt.Errorf("drain: agent id %q is not a number", args[0])
				}
				q.Set("agent", args[0])
				who = "agent " + args[0]
			}
			body := map[string]any{"force": force}
			if limit > 0 {
				body["timeout"] = limit.String()
			}
			h, err := httpFlags.open()
			if err != nil {
				return err
			}
			target := h.url(addr, "/v1/drain?"+q.Encode())
			st, err := drainCall(h, http.MethodPost, target, body)
			if err != nil {
				return err
			}
			if st.Error != "" {
				return fmt.Errorf("drain: %s", st.Error)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is draining (%d replicas)\n", who, st.Replicas)
			if !wait {
				return nil
			}
			deadline := time.Now().Add(timeout)
			for time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				// The token too: the agent may restrict its pages
				// (--http-require-auth-for pages).
				st, err := drainCall(h, http.MethodGet, target, nil)
				switch {
				case errors.Is(err, errAgentGone):
					fmt.Fprintln(cmd.OutOrStdout(), "drained; the agent has stopped")
					return nil
				case err != nil:
					return err
				case !st.Draining && st.Error != "":
					return fmt.Errorf("drain: %s", st.Error)
				}
			}
			return fmt.Errorf("drain: the %s still runs after %v", who, timeout)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "localhost:9644", "HTTP address (--http-addr) of the agent to drain, or of any agent when AGENT-ID is given.")
	cmd.Flags().BoolVar(&force, "force", false, "Stop the agent at the time limit even if replicas are left, or when the others cannot hold them all.")
	cmd.Flags().DurationVar(&limit, "drain-timeout", 0, "Time limit of the drain; 0 means the agent's --drain-timeout (5m when that is 0).")
	cmd.Flags().BoolVar(&wait, "wait", false, "Wait until the agent has stopped.")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "Longest --wait.")
	httpFlags.register(cmd.Flags())
	return cmd
}

// drainStatus is the agent's /v1/drain answer.
type drainStatus struct {
	AgentID  int32  `json:"agent_id"`
	Draining bool   `json:"draining"`
	Replicas int    `json:"replicas"`
	Error    string `json:"error"`
}

// errAgentGone: the drained agent no longer answers, or no longer is a
// member (asked through another agent): it has stopped.
var errAgentGone = errors.New("the agent has stopped")

// drainCall sends one /v1/drain request, body (if any) as the JSON the
// agent requires of a state-changing request. A refused or failed drain
// comes back in Error; only transport failures and unexpected answers are
// errors.
func drainCall(h agentHTTP, method, target string, body map[string]any) (drainStatus, error) {
	var st drainStatus
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return st, err
		}
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, target, payload)
	if err != nil {
		return st, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	h.authorize(req)
	resp, err := h.client.Do(req)
	if err != nil {
		if method == http.MethodGet {
			return st, errAgentGone
		}
		return st, fmt.Errorf("drain: %w", err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusNotFound {
		return st, errAgentGone
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return st, fmt.Errorf("drain: %s answered %s: %w", target, resp.Status, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		// A refusal for want of credentials (401, 403) is plain text.
		return st, fmt.Errorf("drain: %s answered %s: %s", target, resp.Status, strings.TrimSpace(string(raw)))
	}
	if resp.StatusCode != http.StatusOK && st.Error == "" {
		return st, fmt.Errorf("drain: %s answered %s", target, resp.Status)
	}
	return st, nil
}
