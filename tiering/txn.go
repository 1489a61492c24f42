package tiering

import (
	"context"
	"fmt"
	"sort"

	"github.com/strata-streaming/strata/internal/txnindex"
)

// AbortedTransactions collects the aborted transactions that overlap
// [from, upper) from the transaction indexes of the uploaded segments,
// from the one holding from on, as the local log does with its own
// (internal/txnindex). complete is false when the bucket's segments ran
// out before an entry showed that nothing later can overlap: the caller
// goes on with the local log. Only segments that aborted something have
// an index object, and each is read once into the chunk cache.
func (p *Partition) AbortedTransactions(ctx context.Context, from, upper int64) (out []txnindex.Entry, complete bool, err error) {
	h := p.head()
	visit := func(entries []Entry) bool {
		for _, e := range entries {
			if e.Next <= from || e.Next <= h.StartOffset || e.TxnIndexSize == 0 {
				continue
			}
			var idx []txnindex.Entry
			if idx, err = p.txnIndex(ctx, e); err != nil {
				return false
			}
			if out, complete = txnindex.Collect(out, idx, from, upper); complete {
				return false
			}
		}
		return true
	}
	for i := sort.Search(len(h.Pages), func(i int) bool { return h.Pages[i].Next > from }); i < len(h.Pages); i++ {
		var entries []Entry
		if entries, err = p.manifest.Page(ctx, h.Pages[i]); err != nil {
			return nil, false, err
		}
		if !visit(entries) {
			return out, complete, err
		}
	}
	visit(h.Tail)
	return out, complete, err
}

// txnIndex reads and checks the transaction index object of e.
func (p *Partition) txnIndex(ctx context.Context, e Entry) ([]txnindex.Entry, error) {
	key := p.prefix + e.Object + suffixTxnIndex
	b, err := p.t.chunks.Get(ctx, key, func(ctx context.Context) ([]byte, error) { return p.getAll(ctx, key, e.TxnIndexSize) })
	if err != nil {
		return nil, fmt.Errorf("tiering: %s: read transaction index of %s: %w", p.name(), e.Object, err)
	}
	idx, err := txnindex.Decode(b, e.Base, e.Next)
	if err != nil {
		return nil, fmt.Errorf("tiering: %s: transaction index of %s: %w", p.name(), e.Object, err)
	}
	return idx, nil
}
