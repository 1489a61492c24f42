package objstore

// ParseS3URL reads an s3:// store URL (Open's syntax) into a configuration
// and a key prefix without making any request. `strata verify` uses it to
// reach the same bucket with a client other than the agents'.
func ParseS3URL(raw string) (S3Config, string, error) { return parseS3URL(raw) }
