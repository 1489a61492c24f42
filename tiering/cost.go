package tiering

// Cost accounting: every store request tiering makes for a partition goes
// through that partition's topicBucket, a decorator that counts it under
// the partition's topic. An object store bills by request class and by
// stored bytes, so the counters are by billing class, not by Bucket method:
//
//	strata_store_topic_requests_total{topic,op}   op = PUT, GET, LIST, DELETE
//	strata_store_topic_bytes_total{topic,direction} direction = write, read
//	strata_store_topic_puts_per_gib{topic}        PUTs per GiB written, at scrape time
//
// Put and PutReader are PUT; Get, GetRange and Stat (a HEAD) are GET; a
// List walk is one LIST however many pages the backend fetched (the same
// rule as strata_store_requests_total). Requests are counted whatever their
// outcome, since failed requests are billed too; bytes only when they
// moved. "Ingested" in PUTs per GiB means bytes this agent wrote to the
// store for the topic (segments, indexes, snapshots, manifests): only a
// partition's leader uploads, so summed over agents that is every byte the
// topic put in the bucket. Requests made outside a partition (cluster
// metadata, the store probe) are not a topic's and are not counted here.

import (
	"context"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Billing classes of store requests, the values of the op label.
const (
	CostPut    = "PUT"
	CostGet    = "GET"
	CostList   = "LIST"
	CostDelete = "DELETE"
)

// Directions of the bytes counter.
const (
	CostWrite = "write"
	CostRead  = "read"
)

// costMetrics are the per-topic counters of store requests and bytes.
type costMetrics struct {
	requests *prometheus.CounterVec // topic, op
	bytes    *prometheus.CounterVec // topic, direction
}

func newCostMetrics() *costMetrics {
	return &costMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_store_topic_requests_total",
			Help: "Object store requests made for a topic's partitions, by billing class (PUT, GET, LIST, DELETE)."}, []string{"topic", "op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_store_topic_bytes_total",
			Help: "Object bytes written to (write) or read from (read) the store for a topic's partitions."}, []string{"topic", "direction"}),
	}
}

var putsPerGiBDesc = prometheus.NewDesc("strata_store_topic_puts_per_gib",
	"PUT requests per GiB written to the store for the topic since the agent started; absent before any byte is written.", []string{"topic"}, nil)

// Describe and Collect export the counters and the ratio derived from them.
func (c *costMetrics) Describe(ch chan<- *prometheus.Desc) {
	c.requests.Describe(ch)
	c.bytes.Describe(ch)
	ch <- putsPerGiBDesc
}

func (c *costMetrics) Collect(ch chan<- prometheus.Metric) {
	c.requests.Collect(ch)
	c.bytes.Collect(ch)
	for topic, u := range c.Usage() {
		if r, ok := u.PutsPerGiB(); ok {
			ch <- prometheus.MustNewConstMetric(putsPerGiBDesc, prometheus.GaugeValue, r, topic)
		}
	}
}

// TopicUsage is what a topic's partitions asked of the store on this agent
// since it started.
type TopicUsage struct {
	Puts         float64 `json:"puts"`
	Gets         float64 `json:"gets"`
	Lists        float64 `json:"lists"`
	Deletes      float64 `json:"deletes"`
	BytesWritten float64 `json:"bytes_written"`
	BytesRead    float64 `json:"bytes_read"`
}

// Add sums two usages (of one topic on two agents).
func (u TopicUsage) Add(v TopicUsage) TopicUsage {
	return TopicUsage{u.Puts + v.Puts, u.Gets + v.Gets, u.Lists + v.Lists, u.Deletes + v.Deletes,
		u.BytesWritten + v.BytesWritten, u.BytesRead + v.BytesRead}
}

// PutsPerGiB is PUT requests per GiB written; false before any byte was.
func (u TopicUsage) PutsPerGiB() (float64, bool) {
	if u.BytesWritten <= 0 {
		return 0, false
	}
	return u.Puts / (u.BytesWritten / (1 << 30)), true
}

// Usage reads the counters, by topic.
func (c *costMetrics) Usage() map[string]TopicUsage {
	out := map[string]TopicUsage{}
	// read visits each counter of vec with its topic and its other label.
	read := func(vec *prometheus.CounterVec, other string, apply func(u *TopicUsage, label string, v float64)) {
		ch := make(chan prometheus.Metric, 16)
		go func() { vec.Collect(ch); close(ch) }()
		for m := range ch {
			var pb dto.Metric
			if m.Write(&pb) != nil {
				continue
			}
			labels := map[string]string{}
			for _, l := range pb.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			u := out[labels["topic"]]
			apply(&u, labels[other], pb.GetCounter().GetValue())
			out[labels["topic"]] = u
		}
	}
	read(c.requests, "op", func(u *TopicUsage, op string, v float64) {
		switch op {
		case CostPut:
			u.Puts = v
		case CostGet:
			u.Gets = v
		case CostList:
			u.Lists = v
		case CostDelete:
			u.Deletes = v
		}
	})
	read(c.bytes, "direction", func(u *TopicUsage, dir string, v float64) {
		if dir == CostWrite {
			u.BytesWritten = v
		} else {
			u.BytesRead = v
		}
	})
	return out
}

// StoreUsage is what each topic's partitions asked of the store on this
// agent since it started.
func (t *Tierer) StoreUsage() map[string]TopicUsage { return t.metrics.costs.Usage() }

// topicBucket counts the requests it passes to the shared bucket under one
// topic. It does not own the bucket: Close is a no-op.
type topicBucket struct {
	inner                  objstore.Bucket
	put, get, list, delete prometheus.Counter
	written, read          prometheus.Counter
}

var _ objstore.Bucket = (*topicBucket)(nil)

func (c *costMetrics) bucket(inner objstore.Bucket, topic string) *topicBucket {
	return &topicBucket{inner: inner,
		put:     c.requests.WithLabelValues(topic, CostPut),
		get:     c.requests.WithLabelValues(topic, CostGet),
		list:    c.requests.WithLabelValues(topic, CostList),
		delete:  c.requests.WithLabelValues(topic, CostDelete),
		written: c.bytes.WithLabelValues(topic, CostWrite),
		read:    c.bytes.WithLabelValues(topic, CostRead),
	}
}

func (b *topicBucket) Get(ctx context.Context, key string) ([]byte, objstore.Attributes, error) {
	b.get.Inc()
	data, attrs, err := b.inner.Get(ctx, key)
	b.read.Add(float64(len(data)))
	return data, attrs, err
}

func (b *topicBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	b.get.Inc()
	rc, err := b.inner.GetRange(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	return &objstore.CountingBody{ReadCloser: rc, Bytes: b.read}, nil
}

func (b *topicBucket) Put(ctx context.Context, key string, data []byte, opts objstore.PutOptions) (string, error) {
	b.put.Inc()
	etag, err := b.inner.Put(ctx, key, data, opts)
	if err == nil {
		b.written.Add(float64(len(data)))
	}
	return etag, err
}

func (b *topicBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts objstore.PutOptions) (string, error) {
	b.put.Inc()
	etag, err := b.inner.PutReader(ctx, key, r, size, opts)
	if err == nil {
		b.written.Add(float64(size))
	}
	return etag, err
}

func (b *topicBucket) Delete(ctx context.Context, key string) error {
	b.delete.Inc()
	return b.inner.Delete(ctx, key)
}

func (b *topicBucket) Stat(ctx context.Context, key string) (objstore.Attributes, error) {
	b.get.Inc()
	return b.inner.Stat(ctx, key)
}

func (b *topicBucket) List(ctx context.Context, prefix string, fn func(key string, attrs objstore.Attributes) error) error {
	b.list.Inc()
	return b.inner.List(ctx, prefix, fn)
}

// Close does nothing: the Tierer's bucket outlives its partitions.
func (b *topicBucket) Close() error { return nil }
