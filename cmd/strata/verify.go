package main

// `strata verify --store URL` checks a store from outside the agents:
// every manifest entry's objects exist with the recorded sizes (and, unless
// --no-checksums, the CRC-32C of each segment), and it lists the objects
// no manifest names. An s3:// store is read with minio-go, a client
// independent of the agents' AWS SDK one, so a bug shared by the writer
// and the reader cannot hide a missing object.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/spf13/cobra"

	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

var errVerifyFailed = errors.New("verify: the store has problems (listed above)")

func newVerifyCmd() *cobra.Command {
	var (
		store      string
		noChecksum bool
		asJSON     bool
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check that every object the manifests name is in the store, intact; list orphans",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if store == "" {
				return errors.New("verify: --store is required (the agents' --store)")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r, closeFn, err := openVerifyReader(ctx, store)
			if err != nil {
				return err
			}
			defer closeFn()
			rep, err := tiering.Verify(ctx, r, !noChecksum)
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printVerifyReport(cmd.OutOrStdout(), rep)
			}
			if len(rep.Problems) > 0 {
				return errVerifyFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "", "The store to check, as the agents' --store (s3://bucket/prefix?endpoint=..., file:///path).")
	f.BoolVar(&noChecksum, "no-checksums", false, "Check sizes only; do not read every segment to check its CRC-32C.")
	f.BoolVar(&asJSON, "json", false, "Print the report as JSON.")
	f.DurationVar(&timeout, "timeout", time.Hour, "Give up after this long.")
	return cmd
}

func printVerifyReport(w io.Writer, rep tiering.Report) {
	fmt.Fprintf(w, "partitions %d, segments %d, bytes %d, problems %d, orphans %d, retired %d\n",
		rep.Partitions, rep.Segments, rep.Bytes, len(rep.Problems), len(rep.Orphans), rep.Retired)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.Problems) > 0 {
		fmt.Fprintln(tw, "PROBLEM\tKEY")
		for _, p := range rep.Problems {
			fmt.Fprintf(tw, "%s\t%s\n", p.What, p.Key)
		}
	}
	if len(rep.Orphans) > 0 {
		fmt.Fprintln(tw, "ORPHAN\tBYTES\tLAST-MODIFIED")
		for _, o := range rep.Orphans {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", o.Key, o.Size, o.LastModified.UTC().Format(time.RFC3339))
		}
	}
	tw.Flush()
}

// openVerifyReader opens store read-only: with minio-go for s3://, with
// the agents' own backend for the others.
func openVerifyReader(ctx context.Context, store string) (tiering.Reader, func(), error) {
	if !strings.HasPrefix(store, "s3://") {
		b, err := objstore.Open(ctx, store)
		if err != nil {
			return nil, nil, fmt.Errorf("verify: %w", err)
		}
		return b, func() { b.Close() }, nil
	}
	cfg, prefix, err := objstore.ParseS3URL(store)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
		if cfg.Region != "" {
			endpoint = "https://s3." + cfg.Region + ".amazonaws.com"
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: endpoint %q: %w", endpoint, err)
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{}}),
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	if ok, err := client.BucketExists(ctx, cfg.Bucket); err != nil || !ok {
		return nil, nil, fmt.Errorf("verify: bucket %q at %s: exists %v, %v", cfg.Bucket, endpoint, ok, err)
	}
	p := ""
	if prefix != "" {
		p = prefix + "/"
	}
	return minioReader{client: client, bucket: cfg.Bucket, prefix: p}, func() {}, nil
}

// minioReader is tiering.Reader over minio-go, keys relative to prefix.
type minioReader struct {
	client *minio.Client
	bucket string
	prefix string
}

func minioErr(key string, err error) error {
	if minio.ToErrorResponse(err).StatusCode == 404 {
		return fmt.Errorf("%s: %w", key, objstore.ErrNotFound)
	}
	return err
}

func (m minioReader) Get(ctx context.Context, key string) ([]byte, objstore.Attributes, error) {
	obj, err := m.client.GetObject(ctx, m.bucket, m.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, objstore.Attributes{}, minioErr(key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		return nil, objstore.Attributes{}, minioErr(key, err)
	}
	info, err := obj.Stat()
	if err != nil {
		return nil, objstore.Attributes{}, minioErr(key, err)
	}
	return b, objstore.Attributes{Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}, nil
}

func (m minioReader) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	if offset > 0 || length >= 0 {
		end := int64(0)
		if length >= 0 {
			end = offset + length - 1
		}
		if err := opts.SetRange(offset, end); err != nil {
			return nil, err
		}
	}
	obj, err := m.client.GetObject(ctx, m.bucket, m.prefix+key, opts)
	if err != nil {
		return nil, minioErr(key, err)
	}
	return obj, nil
}

func (m minioReader) Stat(ctx context.Context, key string) (objstore.Attributes, error) {
	info, err := m.client.StatObject(ctx, m.bucket, m.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return objstore.Attributes{}, minioErr(key, err)
	}
	return objstore.Attributes{Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}, nil
}

func (m minioReader) List(ctx context.Context, prefix string, fn func(string, objstore.Attributes) error) error {
	for info := range m.client.ListObjects(ctx, m.bucket, minio.ListObjectsOptions{Prefix: m.prefix + prefix, Recursive: true}) {
		if info.Err != nil {
			return info.Err
		}
		key := strings.TrimPrefix(info.Key, m.prefix)
		if err := fn(key, objstore.Attributes{Size: info.Size, ETag: info.ETag, LastModified: info.LastModified}); err != nil {
			return err
		}
	}
	return nil
}
