package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes, the bounded values of the outcome label.
const (
	outcomeOK                 = "ok"
	outcomeNotFound           = "not_found"
	outcomePreconditionFailed = "precondition_failed"
	outcomeInvalidRange       = "invalid_range"
	outcomeCanceled           = "canceled"
	outcomeError              = "error"
)

// storeMetrics are the collectors of one backend label. They are shared by
// every metrics bucket built for that backend on one registry.
type storeMetrics struct {
	requests *prometheus.CounterVec   // op, outcome
	bytes    *prometheus.CounterVec   // op
	duration *prometheus.HistogramVec // op
}

// metricsBucket counts the requests of the Bucket it wraps.
type metricsBucket struct {
	inner Bucket
	m     *storeMetrics
}

var _ Bucket = (*metricsBucket)(nil)

// NewMetrics wraps inner and records, with a constant label backend="..."
// (e.g. "fs", "s3"):
//
//	strata_store_requests_total{op,outcome}        calls by result
//	strata_store_bytes_total{op}                   object bytes moved (get, get_range, put)
//
// Put and PutReader share the op "put".
//
//	strata_store_request_duration_seconds{op}      call latency
//
// For GetRange the duration is time to the open stream and the bytes are
// counted as the caller reads them. Wrapping two buckets with the same
// backend on one registry shares the collectors. A nil reg records without
// registering. The returned bucket's Close closes inner.
//
// It panics if reg holds different collectors under these names: that is a
// wiring bug, found at start-up.
func NewMetrics(inner Bucket, reg prometheus.Registerer, backend string) Bucket {
	labels := prometheus.Labels{"backend": backend}
	m := &storeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "strata_store_requests_total",
			Help:        "Object store requests, by operation and outcome.",
			ConstLabels: labels,
		}, []string{"op", "outcome"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "strata_store_bytes_total",
			Help:        "Object bytes read from or written to the object store, by operation.",
			ConstLabels: labels,
		}, []string{"op"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "strata_store_request_duration_seconds",
			Help:        "Object store request latency, by operation.",
			ConstLabels: labels,
			// 1 ms to ~16 s: local fsyncs at the bottom, slow S3 at the top.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"op"}),
	}
	if reg != nil {
		m.requests = register(reg, m.requests)
		m.bytes = register(reg, m.bytes)
		m.duration = register(reg, m.duration)
	}
	return &metricsBucket{inner: inner, m: m}
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("objstore: register store metrics: %v", err))
}

func outcome(err error) string {
	switch {
	case err == nil:
		return outcomeOK
	case IsNotFound(err):
		return outcomeNotFound
	case IsPreconditionFailed(err):
		return outcomePreconditionFailed
	case errors.Is(err, ErrInvalidRange):
		return outcomeInvalidRange
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	default:
		return outcomeError
	}
}

func (b *metricsBucket) observe(op Op, start time.Time, err error) {
	b.m.duration.WithLabelValues(string(op)).Observe(time.Since(start).Seconds())
	b.m.requests.WithLabelValues(string(op), outcome(err)).Inc()
}

func (b *metricsBucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	start := time.Now()
	data, attrs, err := b.inner.Get(ctx, key)
	b.observe(OpGet, start, err)
	b.m.bytes.WithLabelValues(string(OpGet)).Add(float64(len(data)))
	return data, attrs, err
}

func (b *metricsBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := b.inner.GetRange(ctx, key, offset, length)
	b.observe(OpGetRange, start, err)
	if err != nil {
		return nil, err
	}
	return &CountingBody{ReadCloser: rc, Bytes: b.m.bytes.WithLabelValues(string(OpGetRange))}, nil
}

// CountingBody adds what the caller reads to the Bytes counter (also used by
// tiering's per-topic counters).
type CountingBody struct {
	io.ReadCloser
	Bytes prometheus.Counter
}

func (c *CountingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.Bytes.Add(float64(n))
	return n, err
}

func (b *metricsBucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	start := time.Now()
	etag, err := b.inner.Put(ctx, key, data, opts)
	b.observe(OpPut, start, err)
	if err == nil {
		b.m.bytes.WithLabelValues(string(OpPut)).Add(float64(len(data)))
	}
	return etag, err
}

// PutReader is counted as a put: the op label set stays bounded, and a
// dashboard's upload bytes include segments.
func (b *metricsBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	start := time.Now()
	etag, err := b.inner.PutReader(ctx, key, r, size, opts)
	b.observe(OpPut, start, err)
	if err == nil {
		b.m.bytes.WithLabelValues(string(OpPut)).Add(float64(size))
	}
	return etag, err
}

func (b *metricsBucket) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := b.inner.Delete(ctx, key)
	b.observe(OpDelete, start, err)
	return err
}

func (b *metricsBucket) Stat(ctx context.Context, key string) (Attributes, error) {
	start := time.Now()
	attrs, err := b.inner.Stat(ctx, key)
	b.observe(OpStat, start, err)
	return attrs, err
}

// List counts one request for the whole walk; its duration includes the
// time spent in fn.
func (b *metricsBucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	start := time.Now()
	err := b.inner.List(ctx, prefix, fn)
	b.observe(OpList, start, err)
	return err
}

func (b *metricsBucket) Close() error { return b.inner.Close() }
