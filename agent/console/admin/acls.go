package admin

// ACLs and SCRAM users: create and delete one ACL entry at a time (the
// console lists them, and deletes the row it shows), and set or remove a
// user's SCRAM credential.

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one access control entry in the console's words: Kafka's names,
// case-insensitive (allow, read, topic, literal).
type ACL struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
}

// builder turns the entry into kadm's builder, matching exactly this
// entry (a filter for a delete is the entry itself).
func (e ACL) builder(what string) (*kadm.ACLBuilder, error) {
	if !strings.Contains(e.Principal, ":") {
		return nil, Invalid(what + ": the principal is TYPE:NAME, such as User:alice (User:* for everyone)")
	}
	host := e.Host
	if host == "" {
		host = "*"
	}
	op, err := kmsg.ParseACLOperation(e.Operation)
	if err != nil || op == kmsg.ACLOperationAny || op == kmsg.ACLOperationUnknown {
		return nil, Invalid(fmt.Sprintf("%s: operation %q: want read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write or all", what, e.Operation))
	}
	pattern := kadm.ACLPatternLiteral
	if e.PatternType != "" {
		if pattern, err = kmsg.ParseACLResourcePatternType(e.PatternType); err != nil ||
			pattern != kadm.ACLPatternLiteral && pattern != kadm.ACLPatternPrefixed {
			return nil, Invalid(fmt.Sprintf("%s: pattern type %q: want literal or prefixed", what, e.PatternType))
		}
	}
	b := kadm.NewACLs().ResourcePatternType(pattern).Operations(op)
	switch strings.ToLower(e.ResourceType) {
	case "topic":
		b.MaybeTopics(e.ResourceName)
	case "group":
		b.MaybeGroups(e.ResourceName)
	case "transactional_id", "transactional-id":
		b.MaybeTransactionalIDs(e.ResourceName)
	case "cluster":
		b.MaybeClusters(true)
	default:
		return nil, Invalid(fmt.Sprintf("%s: resource type %q: want topic, group, transactional_id or cluster", what, e.ResourceType))
	}
	if e.ResourceName == "" && !strings.EqualFold(e.ResourceType, "cluster") {
		return nil, Invalid(what + ": name the resource (* for every one)")
	}
	switch strings.ToLower(e.Permission) {
	case "allow":
		b.MaybeAllow(e.Principal).AllowHosts(host)
	case "deny":
		b.MaybeDeny(e.Principal).DenyHosts(host)
	default:
		return nil, Invalid(fmt.Sprintf("%s: permission %q: want allow or deny", what, e.Permission))
	}
	return b, nil
}

func (e ACL) String() string {
	name := e.ResourceName
	if strings.EqualFold(e.ResourceType, "cluster") {
		name = "kafka-cluster"
	}
	return fmt.Sprintf("%s %s %s from %s on %s %s %s", e.Principal, strings.ToUpper(e.Permission), strings.ToUpper(e.Operation),
		orStar(e.Host), strings.ToLower(orDefault(e.PatternType, "literal")), strings.ToUpper(e.ResourceType), name)
}

func orStar(s string) string { return orDefault(s, "*") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// CreateACL is create-acls: CreateAcls of one entry.
type CreateACL struct{ ACL }

func (a *CreateACL) Validate() error {
	_, err := a.builder("create-acls")
	return err
}

func (a *CreateACL) Summary() string { return "create ACL " + a.ACL.String() }

func (a *CreateACL) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	b, err := a.builder("create-acls")
	if err != nil {
		return nil, err
	}
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return nil, Refusal("create ACL", err, "")
	}
	for _, r := range res {
		if r.Err != nil {
			return nil, Refusal("create ACL "+a.ACL.String(), r.Err, r.ErrMessage)
		}
	}
	return map[string]any{"created": len(res), "acl": a.ACL.String()}, nil
}

// DeleteACL is delete-acls: DeleteAcls with a filter that matches exactly
// the one entry.
type DeleteACL struct{ ACL }

func (a *DeleteACL) Validate() error {
	_, err := a.builder("delete-acls")
	return err
}

func (a *DeleteACL) Summary() string { return "delete ACL " + a.ACL.String() }

func (a *DeleteACL) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	b, err := a.builder("delete-acls")
	if err != nil {
		return nil, err
	}
	res, err := adm.DeleteACLs(ctx, b)
	if err != nil {
		return nil, Refusal("delete ACL", err, "")
	}
	deleted := 0
	for _, r := range res {
		if r.Err != nil {
			return nil, Refusal("delete ACL "+a.ACL.String(), r.Err, r.ErrMessage)
		}
		for _, d := range r.Deleted {
			if d.Err != nil {
				return nil, Refusal("delete ACL "+a.ACL.String(), d.Err, d.ErrMessage)
			}
			deleted++
		}
	}
	return map[string]any{"deleted": deleted, "acl": a.ACL.String()}, nil
}

// scramMechanism parses SCRAM-SHA-256 or SCRAM-SHA-512 (the default).
func scramMechanism(what, name string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(name) {
	case "", "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	}
	return 0, Invalid(fmt.Sprintf("%s: mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", what, name))
}

// UpsertSCRAMUser is upsert-scram-user: AlterUserScramCredentials setting
// User's credential for Mechanism; kadm salts and hashes the password, so
// only the credential reaches the broker, as with `strata user create`.
type UpsertSCRAMUser struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Password   string `json:"password"`
	Iterations int32  `json:"iterations,omitempty"`
}

func (a *UpsertSCRAMUser) Validate() error {
	switch {
	case a.User == "":
		return Invalid("upsert-scram-user: name the user")
	case a.Password == "":
		return Invalid("upsert-scram-user: give a password")
	case a.Iterations == 0:
		a.Iterations = 8192 // `strata user create`'s default
	}
	_, err := scramMechanism("upsert-scram-user", a.Mechanism)
	return err
}

func (a *UpsertSCRAMUser) Summary() string {
	return fmt.Sprintf("set the %s credential of user %s", orDefault(a.Mechanism, "SCRAM-SHA-512"), a.User)
}

func (a *UpsertSCRAMUser) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	m, err := scramMechanism("upsert-scram-user", a.Mechanism)
	if err != nil {
		return nil, err
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: a.User, Mechanism: m, Iterations: a.Iterations, Password: a.Password}})
	return scramResult("set user "+a.User, a.User, res, err)
}

// DeleteSCRAMUser is delete-scram-user: AlterUserScramCredentials
// removing User's credential for Mechanism.
type DeleteSCRAMUser struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

func (a *DeleteSCRAMUser) Validate() error {
	if a.User == "" {
		return Invalid("delete-scram-user: name the user")
	}
	_, err := scramMechanism("delete-scram-user", a.Mechanism)
	return err
}

func (a *DeleteSCRAMUser) Summary() string {
	return fmt.Sprintf("delete the %s credential of user %s", orDefault(a.Mechanism, "SCRAM-SHA-512"), a.User)
}

func (a *DeleteSCRAMUser) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	m, err := scramMechanism("delete-scram-user", a.Mechanism)
	if err != nil {
		return nil, err
	}
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: a.User, Mechanism: m}}, nil)
	return scramResult("delete user "+a.User, a.User, res, err)
}

func scramResult(what, user string, res kadm.AlteredUserSCRAMs, err error) (any, error) {
	if err != nil {
		return nil, Refusal(what, err, "")
	}
	if r, ok := res[user]; !ok {
		return nil, Refusal(what, fmt.Errorf("the broker did not answer for the user"), "")
	} else if r.Err != nil {
		return nil, Refusal(what, r.Err, r.ErrMessage)
	}
	return map[string]any{"user": user}, nil
}
