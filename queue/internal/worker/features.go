package worker

import (
	"context"
	"sync/atomic"

	"github.com/navree/navree/queue/internal/driver"
)

// features are, by queue, the features of its jobs that the worker's
// searches of it do (driver.Features). They only make a search cheaper:
// a search that does fewer than the store records of its queue takes
// nothing, and the fetcher then reads them and searches again (see
// next). The first search's sweep reads them, and the prober once a
// second, forgetting those no job needs any more.
type features []atomic.Uint32

// of returns the features the searches of queue i do.
func (f features) of(i int) driver.Features { return driver.Features(f[i].Load()) }

// readFeatures reads the features of queue i, name (forgetting first,
// with tidy, those no job needs), and reports whether it found one that
// the searches of the queue did not do.
func (w *worker) readFeatures(ctx context.Context, i int, name string, tidy bool) bool {
	got, err := w.cfg.Store.Features(ctx, name, tidy)
	if err != nil {
		got = driver.AllFeatures // its search does them all, and reports the database's error
	}
	was := driver.Features(w.features[i].Swap(uint32(got)))
	return got&^was != 0
}
