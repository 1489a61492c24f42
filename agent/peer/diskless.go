package peer

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/disklesswire"
)

// DisklessCommit asks the agent at the other end, which coordinates the
// request's partitions, to commit an uploaded object's batches
// (agent/disklesswire). The answer has one result per batch; an error
// means no batch's outcome is known.
func (c *Client) DisklessCommit(ctx context.Context, req *disklesswire.CommitRequest) (*disklesswire.CommitResponse, error) {
	resp := req.ResponseKind().(*disklesswire.CommitResponse)
	if err := c.request(ctx, req, resp); err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("diskless commit: %w", peerError(resp.ErrorCode, c.addr))
	}
	if len(resp.Results) != len(req.Batches) {
		return nil, fmt.Errorf("kafka: peer %s answered a diskless commit of %d batches with %d results", c.addr, len(req.Batches), len(resp.Results))
	}
	return resp, nil
}

// DisklessIndex asks the agent at the other end where diskless
// partitions' batches are; one answer per partition, in order.
func (c *Client) DisklessIndex(ctx context.Context, req *disklesswire.IndexRequest) (*disklesswire.IndexResponse, error) {
	resp := req.ResponseKind().(*disklesswire.IndexResponse)
	if err := c.request(ctx, req, resp); err != nil {
		return nil, err
	}
	if len(resp.Partitions) != len(req.Partitions) {
		return nil, fmt.Errorf("kafka: peer %s answered a diskless index request of %d partitions with %d", c.addr, len(req.Partitions), len(resp.Partitions))
	}
	return resp, nil
}

// DisklessGuard asks the agent at the other end, which coordinates the
// partition, to stand a verification guard (agent/disklesswire).
func (c *Client) DisklessGuard(ctx context.Context, req *disklesswire.GuardRequest) error {
	resp := req.ResponseKind().(*disklesswire.GuardResponse)
	if err := c.request(ctx, req, resp); err != nil {
		return err
	}
	return CodeError(resp.ErrorCode, c.addr)
}

// DisklessObjects asks the agent at the other end which of ids its batch
// coordinators reference; one flag per id.
func (c *Client) DisklessObjects(ctx context.Context, req *disklesswire.ObjectsRequest) ([]bool, error) {
	resp := req.ResponseKind().(*disklesswire.ObjectsResponse)
	if err := c.request(ctx, req, resp); err != nil {
		return nil, err
	}
	if err := CodeError(resp.ErrorCode, c.addr); err != nil {
		return nil, err
	}
	if len(resp.Referenced) != len(req.IDs) {
		return nil, fmt.Errorf("kafka: peer %s answered about %d objects for %d", c.addr, len(resp.Referenced), len(req.IDs))
	}
	return resp.Referenced, nil
}

// DisklessTrim asks the agent at the other end, which coordinates the
// partition, to raise its log start; it returns the log start.
func (c *Client) DisklessTrim(ctx context.Context, req *disklesswire.TrimRequest) (int64, error) {
	resp := req.ResponseKind().(*disklesswire.TrimResponse)
	if err := c.request(ctx, req, resp); err != nil {
		return -1, err
	}
	return resp.LogStart, CodeError(resp.ErrorCode, c.addr)
}

// CodeError is the error the agent acts on for a Kafka error code from
// the agent at addr.
func CodeError(code int16, addr string) error {
	if code == 0 {
		return nil
	}
	return peerError(code, addr)
}
