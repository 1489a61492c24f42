package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// S3 limits that shape uploads.
const (
	// S3MinPartSize is the smallest part of a multipart upload (all but
	// the last part must be at least this large).
	S3MinPartSize = 5 << 20
	// S3MaxPartSize is the largest part of a multipart upload.
	S3MaxPartSize = 5 << 30
	// S3MaxParts is the most parts one multipart upload may have.
	S3MaxParts = 10000
	// S3MaxObjectSize is the largest object S3 stores.
	S3MaxObjectSize = 5 << 40
)

// S3Config configures an S3 bucket (NewS3). Start from DefaultS3Config.
//
// Credentials never come from here but from the AWS SDK's default chain:
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), the
// shared config and credentials files (AWS_PROFILE), web identity
// (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), container credentials and
// EC2 instance metadata. Credentials may be set in code for programs that
// embed Strata and for tests.
type S3Config struct {
	// Bucket is the bucket's name. It must exist.
	Bucket string
	// Endpoint is the S3 service's URL, e.g. http://127.0.0.1:9000 for a
	// local MinIO. Empty means AWS S3 in Region.
	Endpoint string
	// Region signs requests. Empty means the SDK's choice (AWS_REGION,
	// the shared config), and us-east-1 if it has none, which is what
	// MinIO answers for unless configured otherwise.
	Region string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// rather than the host name (bucket.endpoint/key). MinIO, Ceph and most
	// S3-compatible stores at an IP address need it.
	PathStyle bool
	// PartSize is the size of each part of a multipart upload; objects
	// larger than this are uploaded in parts. It grows for an object that
	// would need more than S3MaxParts parts.
	PartSize int64
	// UploadConcurrency is how many parts of one upload are sent at once.
	UploadConcurrency int
	// MaxAttempts bounds the attempts of each request, the first
	// included. Connection errors, 500s, 502s, 503s (SlowDown among them)
	// and 504s are retried with exponential backoff and full jitter.
	MaxAttempts int
	// MaxBackoff caps the wait between two attempts of a request.
	MaxBackoff time.Duration
	// ListPageSize is how many keys one ListObjectsV2 request asks for
	// (S3 answers at most 1000).
	ListPageSize int32
	// SSE is the server-side encryption every object is written with:
	// "AES256" (SSE-S3, keys the store manages), "aws:kms" (SSE-KMS) or
	// "aws:kms:dsse" (two layers under KMS). Empty leaves it to the
	// bucket's default encryption. Reads need nothing: the store decrypts
	// for whoever may read the object (and, under KMS, use the key).
	SSE string
	// SSEKMSKeyID is the KMS key (id, ARN or alias) of SSE aws:kms or
	// aws:kms:dsse; empty means the account's aws/s3 key.
	SSEKMSKeyID string
	// SSEBucketKey asks S3 for a bucket key under SSE-KMS, so that objects
	// are encrypted under a key derived once per bucket rather than a KMS
	// request per object: far fewer KMS calls for the many small objects
	// (manifests, states) Strata writes.
	SSEBucketKey bool
	// Credentials replaces the SDK's default credential chain when set.
	// It is never read from a store URL.
	Credentials aws.CredentialsProvider
}

// DefaultS3Config returns the defaults for bucket: 16 MiB parts, four at a
// time, five attempts per request with at most 20 s between two, and
// 1000 keys per list page.
func DefaultS3Config(bucket string) S3Config {
	return S3Config{
		Bucket:            bucket,
		PartSize:          16 << 20,
		UploadConcurrency: 4,
		MaxAttempts:       5,
		MaxBackoff:        20 * time.Second,
		ListPageSize:      1000,
	}
}

// Validate names the first field that is unusable.
func (c S3Config) Validate() error {
	switch {
	case c.Bucket == "":
		return errors.New("objstore: s3: Bucket is empty")
	case c.PartSize < S3MinPartSize || c.PartSize > S3MaxPartSize:
		return fmt.Errorf("objstore: s3: PartSize %d is outside S3's limits [%d, %d]", c.PartSize, S3MinPartSize, int64(S3MaxPartSize))
	case c.UploadConcurrency < 1:
		return fmt.Errorf("objstore: s3: UploadConcurrency %d is less than 1", c.UploadConcurrency)
	case c.MaxAttempts < 1:
		return fmt.Errorf("objstore: s3: MaxAttempts %d is less than 1", c.MaxAttempts)
	case c.MaxBackoff <= 0:
		return fmt.Errorf("objstore: s3: MaxBackoff %v is not positive", c.MaxBackoff)
	case c.ListPageSize < 1 || c.ListPageSize > 1000:
		return fmt.Errorf("objstore: s3: ListPageSize %d is outside [1, 1000]", c.ListPageSize)
	case c.SSE != "" && c.SSE != "AES256" && !c.kms():
		return fmt.Errorf("objstore: s3: sse=%q: want AES256 (SSE-S3), aws:kms or aws:kms:dsse", c.SSE)
	case c.SSEKMSKeyID != "" && !c.kms():
		return fmt.Errorf("objstore: s3: kms-key-id is set but sse=%q; a KMS key needs sse=aws:kms or aws:kms:dsse", c.SSE)
	case c.SSEBucketKey && c.SSE != "aws:kms":
		return fmt.Errorf("objstore: s3: sse-bucket-key is set but sse=%q; a bucket key needs sse=aws:kms", c.SSE)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("objstore: s3: Endpoint %q is not an http:// or https:// URL", c.Endpoint)
		}
		if u.User != nil {
			return fmt.Errorf("objstore: s3: Endpoint %q carries credentials; give them through the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)", u.Scheme+"://xxxxx@"+u.Host)
		}
	}
	return nil
}

// kms reports an SSE that encrypts under a KMS key.
func (c S3Config) kms() bool { return c.SSE == "aws:kms" || c.SSE == "aws:kms:dsse" }

// where names the store in messages: the bucket and the endpoint.
func (c S3Config) where() string {
	if c.Endpoint == "" {
		return fmt.Sprintf("s3 bucket %q at AWS S3", c.Bucket)
	}
	return fmt.Sprintf("s3 bucket %q at %s", c.Bucket, c.Endpoint)
}

// partSizeFor returns the part size for an object of size bytes: the
// configured one, or larger when that would take more than S3MaxParts
// parts (a 16 MiB part size covers objects up to about 156 GiB).
func (c S3Config) partSizeFor(size int64) int64 {
	part := c.PartSize
	if minPart := (size + S3MaxParts - 1) / S3MaxParts; minPart > part {
		// Round up to a whole MiB, as S3 tools do.
		part = (minPart + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return part
}
