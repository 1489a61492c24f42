package main

// `strata quota` sets and shows client quotas with AlterClientQuotas and
// DescribeClientQuotas, as kafka-configs.sh does with its shorthand
// entity flags: --user, --client, --ip or their --*-defaults, with
// --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
// and --delete-config. Works against any Kafka.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	errQuotaNoEntity  = errors.New("quota alter: name an entity with --user, --client, --ip or their --*-defaults")
	errQuotaNothing   = errors.New("quota alter: nothing to change (use --add-config or --delete-config)")
	errQuotaBadValue  = errors.New("quota: a quota value must be a number")
	errQuotaTwoNames  = errors.New("quota: give a name or the default of an entity type, not both")
	errQuotaDuplicate = errors.New("quota: a key is both added and deleted")
)

func newQuotaCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set and show client quotas: byte rates, request percentage, connection rate (works against any Kafka)",
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newQuotaAlterCmd(&cf), newQuotaDescribeCmd(&cf))
	return cmd
}

// quotaEntityFlags are kafka-configs.sh's shorthand entity flags.
type quotaEntityFlags struct {
	user, client, ip                      string
	userDefault, clientDefault, ipDefault bool
}

func (f *quotaEntityFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "user", "", "The user entity: the principal's name (alice for User:alice; ANONYMOUS unauthenticated).")
	fs.BoolVar(&f.userDefault, "user-defaults", false, "The default user entity (<default>), which applies to each user without its own.")
	fs.StringVar(&f.client, "client", "", "The client-id entity.")
	fs.BoolVar(&f.clientDefault, "client-defaults", false, "The default client-id entity (<default>).")
	fs.StringVar(&f.ip, "ip", "", "The ip entity (connection_creation_rate only).")
	fs.BoolVar(&f.ipDefault, "ip-defaults", false, "The default ip entity.")
}

// component is one entity type's flag pair: its name, or nil for the
// default; ok is false when neither is given.
func component(name string, isDefault bool) (n *string, ok bool, err error) {
	switch {
	case name != "" && isDefault:
		return nil, false, errQuotaTwoNames
	case isDefault:
		return nil, true, nil
	case name != "":
		return &name, true, nil
	}
	return nil, false, nil
}

// entity is the flags as an entity for AlterClientQuotas.
func (f *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	for _, c := range []struct {
		typ       string
		name      string
		isDefault bool
	}{{"user", f.user, f.userDefault}, {"client-id", f.client, f.clientDefault}, {"ip", f.ip, f.ipDefault}} {
		n, ok, err := component(c.name, c.isDefault)
		if err != nil {
			return nil, fmt.Errorf("%w (--%s)", err, strings.TrimSuffix(c.typ, "-id"))
		}
		if ok {
			e = append(e, kadm.ClientQuotaEntityComponent{Type: c.typ, Name: n})
		}
	}
	return e, nil
}

// filter is the flags as a DescribeClientQuotas filter: each named
// entity type matched exactly or as its default.
func (f *quotaEntityFlags) filter() ([]kadm.DescribeClientQuotaComponent, error) {
	e, err := f.entity()
	if err != nil {
		return nil, err
	}
	var out []kadm.DescribeClientQuotaComponent
	for _, c := range e {
		d := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name}
		if c.Name == nil {
			d.MatchType = 1 // the default entity
		}
		out = append(out, d)
	}
	return out, nil
}

// quotaOps turns --add-config key=value pairs (comma-separated, as
// kafka-configs takes them) and --delete-config keys into ops.
func quotaOps(add, del []string) ([]kadm.AlterClientQuotaOp, error) {
	kvs, err := parseKeyValues(add)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []kadm.AlterClientQuotaOp
	for _, k := range keys {
		v, err := strconv.ParseFloat(strings.TrimSpace(*kvs[k]), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%s", errQuotaBadValue, k, *kvs[k])
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
	}
	for _, k := range del {
		k = strings.TrimSpace(k)
		if _, ok := kvs[k]; ok {
			return nil, fmt.Errorf("%w: %s", errQuotaDuplicate, k)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	return ops, nil
}

func newQuotaAlterCmd(cf *clientFlags) *cobra.Command {
	var (
		f            quotaEntityFlags
		add, del     []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Set or delete an entity's quotas (kafka-configs --alter --add-config / --delete-config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := f.entity()
			if err != nil {
				return err
			}
			if len(e) == 0 {
				return errQuotaNoEntity
			}
			ops, err := quotaOps(add, del)
			if err != nil {
				return err
			}
			if len(ops) == 0 {
				return errQuotaNothing
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				alter := adm.AlterClientQuotas
				if validateOnly {
					alter = adm.ValidateAlterClientQuotas
				}
				res, err := alter(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
				if err != nil {
					return newBrokerError("alter quotas", e.String(), err, "")
				}
				for _, r := range res {
					if err := newBrokerError("alter quotas", r.Entity.String(), r.Err, r.ErrMessage); err != nil {
						return err
					}
				}
				verb := "altered"
				if validateOnly {
					verb = "validated (not applied)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s quotas of %s\n", verb, entityString(e))
				return nil
			})
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringSliceVar(&add, "add-config", nil, "Quotas to set, key=value[,key=value]: producer_byte_rate, consumer_byte_rate (bytes per second), request_percentage (percent of one thread's time), connection_creation_rate (per second, --ip only).")
	cmd.Flags().StringSliceVar(&del, "delete-config", nil, "Quota keys to remove; an entity left with none is deleted.")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "Ask the cluster to check the change without applying it.")
	return cmd
}

func newQuotaDescribeCmd(cf *clientFlags) *cobra.Command {
	var (
		f      quotaEntityFlags
		strict bool
	)
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show the quotas of the entities the flags select; no flags show every quota (kafka-configs --describe)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := f.filter()
			if err != nil {
				return err
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				got, err := adm.DescribeClientQuotas(ctx, strict, filter)
				if err != nil {
					return newBrokerError("describe quotas", "", err, "")
				}
				printQuotas(cmd.OutOrStdout(), got)
				return nil
			})
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&strict, "strict", false, "Show only entities made of exactly the types named (--user alice --strict leaves out user=alice,client-id=app).")
	return cmd
}

// entityString is kafka-configs' form, user first:
// user=alice,client-id=<default>.
func entityString(e kadm.ClientQuotaEntity) string {
	order := map[string]int{"user": 0, "client-id": 1, "ip": 2}
	sorted := slices.Clone(e)
	sort.SliceStable(sorted, func(i, j int) bool { return order[sorted[i].Type] < order[sorted[j].Type] })
	parts := make([]string, len(sorted))
	for i, c := range sorted {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ",")
}

func printQuotas(w io.Writer, got kadm.DescribedClientQuotas) {
	type row struct{ entity, key, value string }
	var rows []row
	for _, d := range got {
		for _, v := range d.Values {
			rows = append(rows, row{entityString(d.Entity), v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64)})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].entity != rows[j].entity {
			return rows[i].entity < rows[j].entity
		}
		return rows[i].key < rows[j].key
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tQUOTA\tVALUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.entity, r.key, r.value)
	}
	tw.Flush()
}
