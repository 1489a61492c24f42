package objstore

import (
	"strings"
	"testing"
)

func TestParseS3URL(t *testing.T) {
	for _, tc := range []struct {
		url    string
		prefix string
		check  func(S3Config) bool
	}{
		{"s3://strata", "", func(c S3Config) bool {
			d := DefaultS3Config("strata")
			return c.Bucket == "strata" && c.Endpoint == "" && !c.PathStyle && c.PartSize == d.PartSize &&
				c.UploadConcurrency == d.UploadConcurrency && c.MaxAttempts == d.MaxAttempts
		}},
		{"s3://strata/", "", func(c S3Config) bool { return c.Bucket == "strata" }},
		{"s3://strata/prod/cluster-1/", "prod/cluster-1", func(c S3Config) bool { return c.Bucket == "strata" }},
		{"s3://b/p?endpoint=http://127.0.0.1:9000&region=us-east-1&path-style=true", "p", func(c S3Config) bool {
			return c.Endpoint == "http://127.0.0.1:9000" && c.Region == "us-east-1" && c.PathStyle
		}},
		// An endpoint implies path style unless told otherwise.
		{"s3://b?endpoint=http%3A%2F%2F127.0.0.1%3A9000", "", func(c S3Config) bool { return c.PathStyle }},
		{"s3://b?endpoint=https://s3.example.com&path-style=false", "", func(c S3Config) bool { return !c.PathStyle }},
		{"s3://b?part-size=5242880&upload-concurrency=8&max-attempts=2", "", func(c S3Config) bool {
			return c.PartSize == 5<<20 && c.UploadConcurrency == 8 && c.MaxAttempts == 2
		}},
	} {
		cfg, prefix, err := parseS3URL(tc.url)
		if err != nil {
			t.Errorf("parseS3URL(%q): %v", tc.url, err)
			continue
		}
		if prefix != tc.prefix || !tc.check(cfg) {
			t.Errorf("parseS3URL(%q) = %+v, prefix %q (want %q)", tc.url, cfg, prefix, tc.prefix)
		}
	}
}

func TestParseS3URLErrors(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // in the error
	}{
		{"s3://", "names no bucket"},
		{"s3:///prefix", "names no bucket"},
		{"s3://host:9000/bucket", "endpoint="},
		{"s3://b?unknown=1", `unknown parameter "unknown"`},
		{"s3://b?region=a&region=b", "given 2 times"},
		{"s3://b?path-style=maybe", "true or false"},
		{"s3://b?part-size=1024", "PartSize"},
		{"s3://b?part-size=lots", "number of bytes"},
		{"s3://b?upload-concurrency=0", "UploadConcurrency"},
		{"s3://b?max-attempts=0", "MaxAttempts"},
		{"s3://b?endpoint=ftp://x", "Endpoint"},
		{"s3://b?endpoint=127.0.0.1:9000", "Endpoint"},
		{"s3://b/a/../c", "invalid key"},
		{"s3://b/p#frag", "fragment"},
		{"s3://b/%zz", "invalid URL escape"},
	} {
		_, _, err := parseS3URL(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseS3URL(%q): err = %v, want one mentioning %q", tc.url, err, tc.want)
		}
	}
}

// A secret in the store URL is refused, and never echoed.
func TestParseS3URLRefusesSecrets(t *testing.T) {
	const secret = "hunter2-wJalrXUtnFEMI"
	for _, url := range []string{
		"s3://AKIAEXAMPLE:" + secret + "@bucket/prefix",
		"s3://bucket?secret-key=" + secret,
		"s3://bucket?endpoint=http://127.0.0.1:9000&aws_secret_access_key=" + secret,
		"s3://bucket?access_key=AKIA&secret=" + secret,
		"s3://bucket?token=" + secret + "&region=x",
		"s3://bucket?endpoint=http://AKIA:" + secret + "@127.0.0.1:9000",
		"s3://bucket?unknown=" + secret,
	} {
		_, _, err := parseS3URL(url)
		if err == nil {
			t.Errorf("parseS3URL(%q) accepted a secret", url)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("parseS3URL(%q): the error shows the secret: %v", url, err)
		}
	}
}

func TestS3PartSizeFor(t *testing.T) {
	cfg := DefaultS3Config("b")
	for _, tc := range []struct{ size, want int64 }{
		{0, cfg.PartSize},
		{1 << 30, cfg.PartSize},
		{S3MaxParts * cfg.PartSize, cfg.PartSize},
		{S3MaxParts*cfg.PartSize + 1, cfg.PartSize + 1<<20},
		{S3MaxObjectSize, 525 << 20},
	} {
		got := cfg.partSizeFor(tc.size)
		if got != tc.want {
			t.Errorf("partSizeFor(%d) = %d, want %d", tc.size, got, tc.want)
		}
		if parts := (tc.size + got - 1) / got; parts > S3MaxParts || got > S3MaxPartSize {
			t.Errorf("partSizeFor(%d) = %d: %d parts", tc.size, got, parts)
		}
	}
}
