package main

// `strata tiering status` shows, per tiered partition, what is on local
// disk, what is in the store and what is still to upload, from the agents'
// HTTP endpoint /v1/tiering (tiering is not part of the Kafka protocol).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-streaming/strata/tiering"
)

func newTieringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tiering",
		Short: "Show what each partition holds locally and in the store",
	}
	cmd.AddCommand(newTieringStatusCmd())
	return cmd
}

func newTieringStatusCmd() *cobra.Command {
	var (
		agents    string
		timeout   time.Duration
		httpFlags agentHTTPFlags
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Per partition: local bytes, store bytes, stored offsets, upload lag",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := httpFlags.open()
			if err != nil {
				return err
			}
			var all []tiering.Status
			for _, addr := range strings.Split(agents, ",") {
				if addr = strings.TrimSpace(addr); addr == "" {
					continue
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				st, err := fetchTieringStatus(ctx, h, addr)
				cancel()
				if err != nil {
					return err
				}
				all = append(all, st...)
			}
			printTieringStatus(cmd, all)
			return nil
		},
	}
	cmd.Flags().StringVar(&agents, "http", "localhost:9644", "Comma-separated HTTP addresses (--http-addr) of the agents to ask.")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "How long to wait for each agent.")
	httpFlags.register(cmd.Flags())
	return cmd
}

func fetchTieringStatus(ctx context.Context, h agentHTTP, addr string) ([]tiering.Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url(addr, "/v1/tiering"), nil)
	if err != nil {
		return nil, fmt.Errorf("tiering status: --http %q: %w", addr, err)
	}
	// The agent may restrict its pages (--http-require-auth-for pages).
	h.authorize(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tiering status: agent at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tiering status: agent at %s answered %s", addr, resp.Status)
	}
	var body struct{ Partitions []tiering.Status }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("tiering status: agent at %s: %w", addr, err)
	}
	return body.Partitions, nil
}

func printTieringStatus(cmd *cobra.Command, all []tiering.Status) {
	slices.SortFunc(all, func(a, b tiering.Status) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLOCAL-BYTES\tLOCAL-START\tSTORE-BYTES\tSEGMENTS\tSTORE-START\tLAST-UPLOADED\tLAG-BYTES\tLAG-AGE\tERROR")
	for _, s := range all {
		last := "-"
		if s.RemoteSegments > 0 {
			last = fmt.Sprint(s.RemoteNext - 1)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\n", s.Topic, s.Partition, s.LocalBytes, s.LocalStart,
			s.RemoteBytes, s.RemoteSegments, s.RemoteStart, last, s.LagBytes,
			(time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Second), orDash(s.LastError))
	}
	tw.Flush()
}
