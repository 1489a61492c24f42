package kafka

// DescribeUserScramCredentials (key 50), version 0.
//
// Lists each user's SCRAM mechanisms and iteration counts (never salts or
// keys), read from the store so the answer is current on every agent.
// No users named (null or empty) lists every user with a credential. As in
// Kafka, a user named twice gets DUPLICATE_RESOURCE and an unknown one
// RESOURCE_NOT_FOUND, each in its own result. There is no authorizer yet,
// so every connection that passed its listener's authentication may ask
// (Kafka without an authorizer allows it too; docs/security.md).
//
// Authorization (authorize.go): DESCRIBE on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeUserScramCredentials(ctx context.Context, s *Server, r *request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (*kmsg.DescribeUserSCRAMCredentialsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	users, err := s.users.ScramUsers(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		creds, ok := users[user]
		if !ok || len(creds) == 0 {
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = strptr("Attempt to describe a user credential that does not exist")
			return res
		}
		for _, c := range creds {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = c.Mechanism.Code(), int32(c.Iterations)
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
		return res
	}
	if len(req.Users) == 0 {
		names := make([]string, 0, len(users))
		for name := range users {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			resp.Results = append(resp.Results, result(name))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		if count[u.Name] > 1 {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = u.Name
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = strptr("Cannot describe SCRAM credentials for the same user twice in a single request")
			resp.Results = append(resp.Results, res)
			continue
		}
		resp.Results = append(resp.Results, result(u.Name))
	}
	return resp, nil
}
