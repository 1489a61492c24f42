package main

// `strata user` manages SCRAM users with DescribeUserScramCredentials and
// AlterUserScramCredentials, as kafka-configs.sh --entity-type users does:
// create (or change the password of) a user for a mechanism, delete a
// user's credentials, list users with their mechanisms and iterations.
// The password is salted and hashed here, by kadm; it never reaches the
// cluster. Works against any Kafka.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	errNoPassword   = errors.New("user create: give --password or --password-stdin")
	errBadMechanism = errors.New("user: --mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512")
)

func newUserCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, list and delete SCRAM users (works against any Kafka)",
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newUserCreateCmd(&cf), newUserDeleteCmd(&cf), newUserListCmd(&cf))
	return cmd
}

// parseMechanisms reads --mechanism values.
func parseMechanisms(names []string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	for _, n := range names {
		switch strings.ToUpper(n) {
		case "SCRAM-SHA-256":
			out = append(out, kadm.ScramSha256)
		case "SCRAM-SHA-512":
			out = append(out, kadm.ScramSha512)
		default:
			return nil, fmt.Errorf("%w (got %q)", errBadMechanism, n)
		}
	}
	return out, nil
}

func newUserCreateCmd(cf *clientFlags) *cobra.Command {
	var (
		password      string
		passwordStdin bool
		mechanisms    []string
		iterations    int32
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user, or set its password, for each --mechanism",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mechs, err := parseMechanisms(mechanisms)
			if err != nil {
				return err
			}
			if passwordStdin {
				if password, err = readPassword(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			if password == "" {
				return errNoPassword
			}
			name := args[0]
			var upserts []kadm.UpsertSCRAM
			for _, m := range mechs {
				upserts = append(upserts, kadm.UpsertSCRAM{User: name, Mechanism: m, Iterations: iterations, Password: password})
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, nil, upserts)
				if err != nil {
					return newBrokerError("create user", name, err, "")
				}
				if r := res[name]; r.Err != nil {
					return newBrokerError("create user", name, r.Err, r.ErrMessage)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s\n", name, strings.Join(mechanisms, ", "))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&password, "password", "", "The user's password (prefer --password-stdin: a flag shows in the process list).")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "Read the password from the first line of standard input.")
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, "SCRAM mechanisms to create the credential for.")
	cmd.Flags().Int32Var(&iterations, "iterations", 8192, "PBKDF2 iterations of the credential, 4096 to 16384.")
	return cmd
}

// readPassword reads one line, without its line ending.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("user create: read the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func newUserDeleteCmd(cf *clientFlags) *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user's credentials: those of --mechanism, or all it has",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mechs, err := parseMechanisms(mechanisms)
			if err != nil {
				return err
			}
			name := args[0]
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				if len(mechs) == 0 {
					described, err := adm.DescribeUserSCRAMs(ctx, name)
					if err != nil {
						return newBrokerError("describe user", name, err, "")
					}
					d := described[name]
					if d.Err != nil {
						return newBrokerError("describe user", name, d.Err, d.ErrMessage)
					}
					for _, c := range d.CredInfos {
						mechs = append(mechs, c.Mechanism)
					}
				}
				var dels []kadm.DeleteSCRAM
				for _, m := range mechs {
					dels = append(dels, kadm.DeleteSCRAM{User: name, Mechanism: m})
				}
				res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
				if err != nil {
					return newBrokerError("delete user", name, err, "")
				}
				if r := res[name]; r.Err != nil {
					return newBrokerError("delete user", name, r.Err, r.ErrMessage)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted user %s\n", name)
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", nil, "SCRAM mechanisms to delete; empty deletes every one the user has.")
	return cmd
}

func newUserListCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List SCRAM users with their mechanisms and iterations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx)
				if err != nil {
					return newBrokerError("list users", "", err, "")
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USER\tMECHANISMS")
				var failures []error
				for _, d := range described.Sorted() {
					if d.Err != nil {
						failures = append(failures, newBrokerError("list user", d.User, d.Err, d.ErrMessage))
						continue
					}
					var infos []string
					for _, c := range d.CredInfos {
						infos = append(infos, c.String())
					}
					fmt.Fprintf(tw, "%s\t%s\n", d.User, strings.Join(infos, ", "))
				}
				tw.Flush()
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(described))
			})
		},
	}
}
