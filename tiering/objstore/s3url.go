package objstore

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// s3URLParams are the query parameters an s3:// store URL takes.
var s3URLParams = []string{"endpoint", "region", "path-style", "part-size", "upload-concurrency", "max-attempts", "sse", "kms-key-id", "sse-bucket-key"}

// parseS3URL turns an s3:// store URL into a configuration and a key
// prefix (see Open for the syntax). It makes no request. Errors show the
// URL with query values redacted, since a misplaced secret must not reach
// a log.
func parseS3URL(raw string) (S3Config, string, error) {
	shown := redactStoreURL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: %v", shown, redactURLError(err))
	}
	if u.User != nil {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: credentials are never taken from the store URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or use the AWS SDK's credential chain)", shown)
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: s3 URLs take no fragment", shown)
	}
	if u.Host == "" {
		return S3Config{}, "", fmt.Errorf("objstore: store %q names no bucket (want s3://bucket/prefix)", shown)
	}
	if strings.Contains(u.Host, ":") {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: %q is not a bucket name; give the server with endpoint=http://host:port", shown, u.Host)
	}
	cfg := DefaultS3Config(u.Host)
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return S3Config{}, "", fmt.Errorf("objstore: store %q: key prefix: %w", shown, err)
		}
	}

	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: query: %v", shown, redactURLError(err))
	}
	pathStyleSet := false
	for name, values := range query {
		if !slices.Contains(s3URLParams, name) {
			if looksSecret(name) {
				return S3Config{}, "", fmt.Errorf("objstore: store %q: credentials are never taken from the store URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or use the AWS SDK's credential chain)", shown)
			}
			return S3Config{}, "", fmt.Errorf("objstore: store %q: unknown parameter %q (known: %s)", shown, name, strings.Join(s3URLParams, ", "))
		}
		if len(values) != 1 {
			return S3Config{}, "", fmt.Errorf("objstore: store %q: parameter %q is given %d times", shown, name, len(values))
		}
		value := values[0]
		bad := func(want string) error {
			return fmt.Errorf("objstore: store %q: %s=%q: want %s", shown, name, value, want)
		}
		switch name {
		case "endpoint":
			cfg.Endpoint = value
		case "region":
			cfg.Region = value
		case "path-style":
			v, err := strconv.ParseBool(value)
			if err != nil {
				return S3Config{}, "", bad("true or false")
			}
			cfg.PathStyle, pathStyleSet = v, true
		case "part-size":
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return S3Config{}, "", bad("a number of bytes")
			}
			cfg.PartSize = v
		case "upload-concurrency":
			v, err := strconv.Atoi(value)
			if err != nil {
				return S3Config{}, "", bad("a number")
			}
			cfg.UploadConcurrency = v
		case "max-attempts":
			v, err := strconv.Atoi(value)
			if err != nil {
				return S3Config{}, "", bad("a number")
			}
			cfg.MaxAttempts = v
		case "sse":
			cfg.SSE = value
		case "kms-key-id":
			cfg.SSEKMSKeyID = value
		case "sse-bucket-key":
			v, err := strconv.ParseBool(value)
			if err != nil {
				return S3Config{}, "", bad("true or false")
			}
			cfg.SSEBucketKey = v
		}
	}
	// A custom endpoint is almost always MinIO, Ceph or another store that
	// wants path-style addressing; AWS itself wants virtual hosts.
	if !pathStyleSet {
		cfg.PathStyle = cfg.Endpoint != ""
	}
	if err := cfg.Validate(); err != nil {
		return S3Config{}, "", fmt.Errorf("objstore: store %q: %w", shown, err)
	}
	return cfg, prefix, nil
}

// looksSecret reports a parameter name that suggests a credential.
func looksSecret(name string) bool {
	name = strings.ToLower(name)
	for _, word := range []string{"key", "secret", "token", "password", "credential"} {
		if strings.Contains(name, word) {
			return true
		}
	}
	return false
}

// RedactStoreURL returns a store URL fit for a log line: any password, and
// the value of every query parameter that could hold a secret, replaced.
func RedactStoreURL(raw string) string { return redactStoreURL(raw) }

// redactStoreURL returns raw with any password, and the value of every
// query parameter that is unknown or holds user info, replaced by "xxxxx".
func redactStoreURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparseable: show only what comes before the query and user info.
		shown, _, _ := strings.Cut(raw, "?")
		if scheme, rest, ok := strings.Cut(shown, "://"); ok {
			if _, host, ok := strings.Cut(rest, "@"); ok {
				shown = scheme + "://xxxxx@" + host
			}
		}
		return shown
	}
	if u.RawQuery != "" {
		var parts []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			name, value, _ := strings.Cut(kv, "=")
			decoded, err := url.QueryUnescape(name)
			known := err == nil && slices.Contains(s3URLParams, decoded)
			// An endpoint with user info ("http://key:secret@host") is
			// refused, and must not be shown either.
			if v, err := url.QueryUnescape(value); known && err == nil && !strings.Contains(v, "@") {
				parts = append(parts, kv)
				continue
			}
			parts = append(parts, name+"=xxxxx")
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.Redacted()
}

// redactURLError drops the URL text that net/url puts in its errors.
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
