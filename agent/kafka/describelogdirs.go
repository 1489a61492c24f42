package kafka

// DescribeLogDirs (key 35), versions 1-4.
//
// An agent has one log directory, its data dir, so the answer has exactly
// one entry. Partitions are this agent's replicas with their local size on
// disk (segments already tiered to the object store and deleted locally are
// not counted, since they take no room in this directory); OffsetLag is
// always 0 and IsFuture false because Strata never moves a replica between
// directories. Null Topics means every topic; a requested topic or partition
// this agent holds no replica of is left out, as in Kafka. TotalBytes and
// UsableBytes (v4) come from statfs on the data dir (vfs.StatDisk) and are
// -1 if that fails or the OS cannot tell. Version 0 is not served (Kafka 4
// removed it); version 5 (IsCordoned) is not served.
//
// Authorization (authorize.go): DESCRIBE on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED and no directories.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/vfs"
)

func handleDescribeLogDirs(ctx context.Context, s *Server, r *request, req *kmsg.DescribeLogDirsRequest) (*kmsg.DescribeLogDirsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v3+; older versions see no directories
		return resp, nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.cluster.DataDir()
	dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	if req.Topics == nil {
		for _, t := range s.topics.Topics() {
			if dt, ok := logDirTopic(t, nil); ok {
				dir.Topics = append(dir.Topics, dt)
			}
		}
	} else {
		for _, rt := range req.Topics {
			t, ok := s.topics.Topic(rt.Topic)
			if !ok {
				continue
			}
			if dt, ok := logDirTopic(t, rt.Partitions); ok {
				dir.Topics = append(dir.Topics, dt)
			}
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}

// logDirTopic describes t's replicas on this agent, all of them when
// partitions is nil; it reports false when none is here.
func logDirTopic(t *Topic, partitions []int32) (kmsg.DescribeLogDirsResponseDirTopic, bool) {
	dt := kmsg.NewDescribeLogDirsResponseDirTopic()
	dt.Topic = t.Name
	add := func(p PartitionReader) {
		if !p.Local() {
			return // only other agents hold it
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size, dp.OffsetLag, dp.IsFuture = p.Index(), p.Size(), 0, false
		dt.Partitions = append(dt.Partitions, dp)
	}
	if partitions == nil {
		for _, p := range t.Partitions {
			add(p)
		}
	} else {
		for _, i := range partitions {
			if p, ok := localPartition(t, i); ok {
				add(p)
			}
		}
	}
	return dt, len(dt.Partitions) > 0
}

// diskSpace returns the size of the filesystem holding dir and the bytes an
// unprivileged process may still write there, or -1, -1 if unknown.
func diskSpace(dir string) (total, usable int64) {
	ds, err := vfs.StatDisk(dir)
	if err != nil {
		return -1, -1
	}
	return int64(ds.Total), int64(ds.Free)
}
