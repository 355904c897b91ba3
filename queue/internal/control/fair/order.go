package fair

import (
	"cmp"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// Order sorts the jobs of one queue in the order a fair reservation
// takes them: by priority, higher first; among those of priority 0, the
// jobs without a FairKey first, in due order, then those with one by
// FairSeq (the groups in turns; a place is never below 1), then due time;
// the jobs of other priorities by due time. Ties go by id.
func Order(jobs []*driver.Job) {
	slices.SortFunc(jobs, func(a, b *driver.Job) int {
		if a.Priority != b.Priority || a.Priority != 0 {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), byDue(a, b))
		}
		return cmp.Or(cmp.Compare(a.FairSeq, b.FairSeq), byDue(a, b)) // those without a key: 0
	})
}

// byDue orders two jobs by due time, then id.
func byDue(a, b *driver.Job) int {
	return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
}

// Drained reports whether a fair reservation of up to limit jobs, which
// took jobs, took every due job of priority 0 without a FairKey (see
// driver.Marks.Drained): those, and the jobs of priorities above 0, come
// before the others, so it did if it took fewer of them than the limit.
func Drained(jobs []*driver.Job, limit int) bool {
	first := 0
	for _, j := range jobs {
		if j.Priority > 0 || j.Priority == 0 && j.FairKey == "" {
			first++
		}
	}
	return first < limit
}
