package main

// `strata acl` manages Kafka ACLs with CreateAcls, DescribeAcls and
// DeleteAcls, as kafka-acls.sh --add, --list and --remove do, with its
// flag names: principals and hosts to allow or deny, operations, and the
// resources (--topic, --group, --cluster, --transactional-id) with their
// --resource-pattern-type. Built on kadm's ACL builder, so it works
// against any Kafka with an authorizer.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	errACLNoResource  = errors.New("acl: name a resource with --topic, --group, --cluster or --transactional-id")
	errACLNoPrincipal = errors.New("acl: give --allow-principal or --deny-principal")
)

func newACLCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Create, list and delete ACLs (works against any Kafka with an authorizer)",
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newACLCreateCmd(&cf), newACLListCmd(&cf), newACLDeleteCmd(&cf))
	return cmd
}

// aclFlags are kafka-acls.sh's selection flags.
type aclFlags struct {
	allow, deny           []string
	allowHosts, denyHosts []string
	operations            []string
	topics, groups, txIDs []string
	cluster               bool
	pattern               string
}

func (f *aclFlags) register(fs *pflag.FlagSet, forCreate bool) {
	fs.StringSliceVar(&f.allow, "allow-principal", nil, "Principals (User:name, User:* for all) the ACLs allow.")
	fs.StringSliceVar(&f.deny, "deny-principal", nil, "Principals the ACLs deny.")
	fs.StringSliceVar(&f.allowHosts, "allow-host", nil, "Client IPs --allow-principal applies from; default every host (*).")
	fs.StringSliceVar(&f.denyHosts, "deny-host", nil, "Client IPs --deny-principal applies from; default every host (*).")
	fs.StringSliceVar(&f.operations, "operation", nil, "Operations: read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write, all.")
	fs.StringSliceVar(&f.topics, "topic", nil, "Topic names (or prefixes with --resource-pattern-type prefixed; * for every topic).")
	fs.StringSliceVar(&f.groups, "group", nil, "Consumer group names (or prefixes).")
	fs.StringSliceVar(&f.txIDs, "transactional-id", nil, "Transactional ids (or prefixes).")
	fs.BoolVar(&f.cluster, "cluster", false, "The cluster resource (cluster-wide operations).")
	def, help := "any", "How resource names match: literal, prefixed, or for list and delete also any and match."
	if forCreate {
		def, help = "literal", "How resource names match: literal (the default; * matches all) or prefixed."
	}
	fs.StringVar(&f.pattern, "resource-pattern-type", def, help)
}

// builder turns the flags into kadm's ACL builder. A filter (list, delete)
// left without principals or hosts matches all of them.
func (f *aclFlags) builder(filter bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	pattern, err := kmsg.ParseACLResourcePatternType(f.pattern)
	if err != nil {
		return nil, fmt.Errorf("acl: --resource-pattern-type %q: want literal or prefixed (any or match to list or delete)", f.pattern)
	}
	b.ResourcePatternType(pattern)
	var ops []kadm.ACLOperation
	for _, o := range f.operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil {
			return nil, fmt.Errorf("acl: --operation %q: %w", o, err)
		}
		ops = append(ops, op)
	}
	if !filter && len(ops) == 0 {
		return nil, errors.New("acl: give at least one --operation")
	}
	b.Operations(ops...)
	hasResource := len(f.topics)+len(f.groups)+len(f.txIDs) > 0 || f.cluster
	switch {
	case hasResource:
		b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txIDs...).MaybeClusters(f.cluster)
	case filter:
		b.AnyResource()
	default:
		return nil, errACLNoResource
	}
	switch {
	case len(f.allow)+len(f.deny) > 0:
		b.MaybeAllow(f.allow...).MaybeDeny(f.deny...)
		if len(f.allow) > 0 {
			b.AllowHosts(orWildcard(f.allowHosts, filter)...)
		}
		if len(f.deny) > 0 {
			b.DenyHosts(orWildcard(f.denyHosts, filter)...)
		}
	case filter:
		b.Allow().AllowHosts(f.allowHosts...).Deny().DenyHosts(f.denyHosts...)
	default:
		return nil, errACLNoPrincipal
	}
	return b, nil
}

// orWildcard is hosts, or every host: "*" for a creation, any (none
// named) for a filter.
func orWildcard(hosts []string, filter bool) []string {
	if len(hosts) == 0 && !filter {
		return []string{"*"}
	}
	return hosts
}

func newACLCreateCmd(cf *clientFlags) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create ACLs: each principal × host × operation × resource (kafka-acls --add)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder(false)
			if err != nil {
				return err
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.CreateACLs(ctx, b)
				if err != nil {
					return newBrokerError("create ACLs", "", err, "")
				}
				var failures []error
				for _, r := range res {
					if r.Err != nil {
						failures = append(failures, newBrokerError("create ACL", aclString(r.Principal, r.Host, r.Operation, r.Permission, r.Type, r.Name, r.Pattern), r.Err, r.ErrMessage))
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", aclString(r.Principal, r.Host, r.Operation, r.Permission, r.Type, r.Name, r.Pattern))
				}
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(res))
			})
		},
	}
	f.register(cmd.Flags(), true)
	return cmd
}

func newACLListCmd(cf *clientFlags) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the ACLs the flags select; no flags list every ACL (kafka-acls --list)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder(true)
			if err != nil {
				return err
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.DescribeACLs(ctx, b)
				if err != nil {
					return newBrokerError("list ACLs", "", err, "")
				}
				var rows []kadm.DescribedACL
				for _, r := range res {
					if r.Err != nil {
						return newBrokerError("list ACLs", "", r.Err, r.ErrMessage)
					}
					rows = append(rows, r.Described...)
				}
				printACLs(cmd.OutOrStdout(), rows)
				return nil
			})
		},
	}
	f.register(cmd.Flags(), false)
	return cmd
}

func newACLDeleteCmd(cf *clientFlags) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the ACLs the flags select; a resource flag is required (kafka-acls --remove)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.topics)+len(f.groups)+len(f.txIDs) == 0 && !f.cluster {
				return errACLNoResource // deleting every ACL by accident locks clients out
			}
			b, err := f.builder(true)
			if err != nil {
				return err
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.DeleteACLs(ctx, b)
				if err != nil {
					return newBrokerError("delete ACLs", "", err, "")
				}
				var failures []error
				for _, r := range res {
					if r.Err != nil {
						failures = append(failures, newBrokerError("delete ACLs", "", r.Err, r.ErrMessage))
						continue
					}
					for _, d := range r.Deleted {
						fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", aclString(d.Principal, d.Host, d.Operation, d.Permission, d.Type, d.Name, d.Pattern))
					}
				}
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(res))
			})
		},
	}
	f.register(cmd.Flags(), false)
	return cmd
}

func aclString(principal, host string, op kadm.ACLOperation, perm kmsg.ACLPermissionType, typ kmsg.ACLResourceType, name string, pattern kadm.ACLPattern) string {
	return fmt.Sprintf("%s %s %s from %s on %s %s %s", principal, perm, op, host, strings.ToLower(pattern.String()), typ, name)
}

func printACLs(w io.Writer, rows []kadm.DescribedACL) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tHOST\tPERMISSION\tOPERATION\tRESOURCE-TYPE\tNAME\tPATTERN")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Principal, r.Host, r.Permission, r.Operation, r.Type, r.Name, r.Pattern)
	}
	tw.Flush()
}
