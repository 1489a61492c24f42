package kafka

// AlterUserScramCredentials (key 51), version 0.
//
// Upserts and deletes SCRAM credentials in the store; every agent's cache
// picks the change up within its refresh interval (docs/security.md). The
// client sends the salted password, never the password; the agent keeps
// only StoredKey and ServerKey (internal/scram). Validation and errors
// follow Kafka's: one result per user, in the order users first appear;
// a user altered twice for one mechanism gets DUPLICATE_RESOURCE, an empty
// name or iterations outside [4096, 16384] UNACCEPTABLE_CREDENTIAL, an
// unknown mechanism UNSUPPORTED_SASL_MECHANISM, the deletion of a missing
// credential RESOURCE_NOT_FOUND (checked against the store before any
// write). A user with any invalid alteration has none of its alterations
// applied; the writes of a valid user's alterations are not atomic with
// each other (one store object per user is rewritten per alteration). Beyond Kafka's checks, an empty salt
// or a salted password of the wrong length for the mechanism is
// UNACCEPTABLE_CREDENTIAL: it could never authenticate.
//
// There is no authorizer yet (Kafka requires CLUSTER ALTER): every
// connection that passed its listener's authentication may alter, as
// Kafka without an authorizer allows (docs/security.md).
//
// Authorization (authorize.go): ALTER on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED for every user.

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/scram"
)

// scramAlteration is one upsertion or deletion of a request.
type scramAlteration struct {
	user      string
	mechanism int8
	upsert    *kmsg.AlterUserSCRAMCredentialsRequestUpsertion
}

func handleAlterUserScramCredentials(ctx context.Context, s *Server, r *request, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	byUser := map[string][]scramAlteration{}
	add := func(a scramAlteration) {
		if _, ok := byUser[a.user]; !ok {
			order = append(order, a.user)
		}
		byUser[a.user] = append(byUser[a.user], a)
	}
	for _, d := range req.Deletions {
		add(scramAlteration{user: d.Name, mechanism: d.Mechanism})
	}
	for i := range req.Upsertions {
		u := &req.Upsertions[i]
		add(scramAlteration{user: u.Name, mechanism: u.Mechanism, upsert: u})
	}
	// Deletions are checked against the store before anything is written,
	// so that a user's missing credential fails all of its alterations,
	// not only those after it.
	if !s.authorizedCluster(r, kmsg.ACLOperationAlter) {
		msg := "not authorized to ALTER the CLUSTER"
		for _, user := range order {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode, res.ErrorMessage = user, kerr.ClusterAuthorizationFailed.Code, &msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	var existing map[string][]scram.Credential
	if len(req.Deletions) > 0 {
		var err error
		if existing, err = s.users.ScramUsers(ctx); err != nil {
			for _, user := range order {
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = user, errorCode(err), errorMessage(err)
				resp.Results = append(resp.Results, res)
			}
			return resp, nil
		}
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		code, msg := s.alterUserScram(ctx, user, byUser[user], existing[user])
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// alterUserScram validates then applies one user's alterations; has are
// the user's credentials in the store before the request.
func (s *Server) alterUserScram(ctx context.Context, user string, alts []scramAlteration, has []scram.Credential) (int16, string) {
	if user == "" {
		return kerr.UnacceptableCredential.Code, "Username must not be empty"
	}
	seen := map[int8]bool{}
	type change struct {
		mech *scram.Mechanism
		cred *scram.Credential // nil: delete
	}
	var changes []change
	for _, a := range alts {
		if seen[a.mechanism] {
			return kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"
		}
		seen[a.mechanism] = true
		m, err := scram.ByCode(a.mechanism)
		if err != nil {
			return kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"
		}
		if a.upsert == nil {
			if !slices.ContainsFunc(has, func(c scram.Credential) bool { return c.Mechanism == m }) {
				return kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
			}
			changes = append(changes, change{mech: m})
			continue
		}
		u := a.upsert
		switch {
		case u.Iterations < scram.MinIterations:
			return kerr.UnacceptableCredential.Code, "Too few iterations"
		case u.Iterations > scram.MaxIterations:
			return kerr.UnacceptableCredential.Code, "Too many iterations"
		case len(u.Salt) == 0:
			return kerr.UnacceptableCredential.Code, "Salt must not be empty"
		case len(u.SaltedPassword) != m.KeySize():
			return kerr.UnacceptableCredential.Code, "Salted password must be the " + m.Name() + " hash size"
		}
		cred := m.FromSaltedPassword(u.SaltedPassword, u.Salt, int(u.Iterations))
		changes = append(changes, change{mech: m, cred: &cred})
	}
	for _, c := range changes {
		var err error
		if c.cred == nil {
			err = s.users.DeleteScramCredential(ctx, user, c.mech)
		} else {
			err = s.users.UpsertScramCredential(ctx, user, *c.cred)
		}
		switch {
		case errors.Is(err, ErrNoSuchCredential):
			return kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
		case err != nil:
			return errorCode(err), err.Error()
		}
	}
	return 0, ""
}
