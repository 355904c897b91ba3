package driver_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// grouped is a job of queue in the group key.
func grouped(n int, queue string, availableAt int64, key string) *driver.Job {
	j := newJob(n, queue, availableAt)
	j.FairKey = key
	return j
}

// numbers are the numbers of jobs (see newJob), in order.
func numbers(jobs []*driver.Job) string {
	var out []string
	for _, j := range jobs {
		n, _ := strconv.Atoi(j.ID[len(j.ID)-12:])
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, " ")
}

// reserveFair reserves up to limit jobs of queue at now, fairly.
func reserveFair(t *testing.T, s driver.Driver, queue string, now int64, limit int) []*driver.Job {
	t.Helper()
	jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureFair, Queue: queue, Now: now, At: now, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// oneByOne reserves the jobs of queue at now one at a time, fairly, until
// none is left or n are taken.
func oneByOne(t *testing.T, s driver.Driver, queue string, now int64, n int) []*driver.Job {
	t.Helper()
	var out []*driver.Job
	for len(out) < n {
		jobs := reserveFair(t, s, queue, now, 1)
		if len(jobs) == 0 {
			break
		}
		out = append(out, jobs...)
	}
	return out
}

// TestAFairReservationTakesTheGroupsInTurns: each job with a key takes its
// group's next place, or the round the queue serves when later; a Fair
// reservation takes the jobs without a key first, then the groups' by
// place, then due time, one job of each group a round, a delayed job
// when it is due; a group that joins takes the round being served, and
// after none waits, the place after the last given.
func TestAFairReservationTakesTheGroupsInTurns(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 6; n++ {
			insert(t, s, grouped(n, "a", 10, "tenant:big"))
		}
		insert(t, s,
			grouped(7, "a", 20, "tenant:b"), grouped(8, "a", 20, "tenant:b"),
			grouped(9, "a", 30, "tenant:c"),
			newJob(10, "a", 5), newJob(11, "a", 40),
			grouped(12, "a", 500, "tenant:b"), // delayed
			newJob(99, "other", 0),
		)
		if f, err := s.Features(ctx, "a", true); err != nil || f != driver.FeatureFair {
			t.Fatalf("Features(a) = %b, %v; want fairness", f, err)
		}
		if f, err := s.Features(ctx, "other", true); err != nil || f != 0 {
			t.Fatalf("Features(other) = %b, %v; want none: no job there has a key", f, err)
		}
		got := oneByOne(t, s, "a", 100, 6)
		if s := numbers(got); s != "10 11 1 7 9 2" {
			t.Fatalf("reserved %s, want 10 11 1 7 9 2: those without a key, then the first of each group, by due time", s)
		}
		if got[2].FairKey != "tenant:big" || got[2].FairSeq != 1 || got[3].FairSeq != 1 || got[5].FairSeq != 2 || got[0].FairKey != "" || got[0].FairSeq != 0 {
			t.Fatalf("places: %+v %+v %+v", got[2], got[3], got[5])
		}
		// A group that joins now takes the round being served (2: job 8's).
		insert(t, s, grouped(13, "a", 50, "tenant:d"))
		if f := lookup(t, s, 13); f.Job == nil || f.Job.FairKey != "tenant:d" || f.Job.FairSeq != 2 {
			t.Fatalf("Lookup of the joining job: %+v, want its key and place 2", f.Job)
		}
		if s := numbers(oneByOne(t, s, "a", 100, 100)); s != "8 13 3 4 5 6" {
			t.Fatalf("then reserved %s, want 8 13 3 4 5 6", s)
		}
		if s := numbers(reserveFair(t, s, "a", 500, 10)); s != "12" {
			t.Fatalf("at 500 reserved %s, want the delayed job 12", s)
		}

		// None waits: a group takes the place after the last given.
		insert(t, s, grouped(20, "z", 0, "x"), grouped(21, "z", 0, "x"), grouped(22, "z", 0, "x"))
		reserveFair(t, s, "z", 100, 10)
		insert(t, s, grouped(23, "z", 0, "y"), grouped(24, "z", 0, "x"))
		jobs := reserveFair(t, s, "z", 100, 10)
		if numbers(jobs) != "23 24" || jobs[0].FairSeq != 4 || jobs[1].FairSeq != 4 {
			t.Fatalf("after the queue emptied reserved %s (%+v), want 23 and 24 at place 4, the next after x's last", numbers(jobs), jobs)
		}
	})
}

// TestAFairBatchIsTheFirstInTurns: a batch takes the first jobs in the
// order of turns, and hands them back in it; jobs with a priority go by
// priority first.
func TestAFairBatchIsTheFirstInTurns(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 20; n++ {
			insert(t, s, grouped(n, "a", int64(n), "big"))
		}
		insert(t, s, grouped(21, "a", 30, "small"), grouped(22, "a", 31, "small"), grouped(23, "a", 32, "other"))
		high := grouped(24, "a", 40, "small")
		high.Priority = 5
		insert(t, s, high)
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority | driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 6})
		if err != nil {
			t.Fatal(err)
		}
		if got := numbers(jobs); got != "24 1 21 23 2 22" {
			t.Fatalf("reserved %s, want 24 (priority 5) 1 21 23 (round 1) 2 22 (round 2)", got)
		}
	})
}

// TestConcurrentFairReservationsNeverOverlap: reservations at once, in
// batches, take every job once.
func TestConcurrentFairReservationsNeverOverlap(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		var jobs []*driver.Job
		for n := 1; n <= 200; n++ {
			j := grouped(n, "a", 0, fmt.Sprint("g", n%7))
			if n%5 == 0 {
				j.FairKey = ""
			}
			jobs = append(jobs, j)
		}
		if _, err := s.InsertMany(ctx, nil, jobs, 1); err != nil {
			t.Fatal(err)
		}
		reservedOnce(t, s, driver.Reservation{Features: driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10}, 200)
	})
}

// TestAFairJobKeepsItsKeyWhereverItGoes: a failed job keeps its key, and
// its retry takes a new place; a job held by its concurrency limit takes
// its place as it is admitted; a released job keeps its place.
func TestAFairJobKeepsItsKeyWhereverItGoes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, grouped(1, "a", 0, "g"), grouped(2, "a", 0, "g"))
		j := reserveFair(t, s, "a", 100, 1)[0]
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Attempt: 1, At: 100, Error: "boom"}); err != nil || !ok {
			t.Fatalf("Fail: %v, %v", ok, err)
		}
		if f := lookup(t, s, 1); f.Failed == nil || f.Failed.FairKey != "g" {
			t.Fatalf("the failed job: %+v, want its key g", f.Failed)
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 10, false)
		if err != nil || len(failed) != 1 || failed[0].FairKey != "g" {
			t.Fatalf("Failed: %+v, %v", failed, err)
		}
		if err := s.Retry(ctx, j.ID, 200); err != nil {
			t.Fatal(err)
		}
		if f := lookup(t, s, 1); f.Job == nil || f.Job.FairKey != "g" || f.Job.FairSeq != 3 {
			t.Fatalf("the retried job: %+v, want key g at the group's next place, 3", f.Job)
		}
		r := reserveFair(t, s, "a", 300, 1)[0]
		if numbers([]*driver.Job{r}) != "2" {
			t.Fatalf("reserved %s, want 2, whose place is before the retry's", r.ID)
		}
		if ok, err := s.Release(ctx, r.ID, r.Attempts, 400, driver.Failure{Attempt: 1, At: 300, Error: "again"}); err != nil || !ok {
			t.Fatalf("Release: %v, %v", ok, err)
		}
		if f := lookup(t, s, 2); f.Job == nil || f.Job.FairSeq != 2 {
			t.Fatalf("the released job: %+v, want its place, 2", f.Job)
		}

		held := grouped(3, "b", 0, "h")
		held.LimitKey, held.LimitMax = "fair-limit", 1
		first := grouped(4, "b", 0, "h")
		first.LimitKey, first.LimitMax = "fair-limit", 1
		insert(t, s, first, held)
		if f := lookup(t, s, 3); f.Job == nil || !f.Job.Held || f.Job.FairKey != "h" {
			t.Fatalf("the held job: %+v", f.Job)
		}
		run := reserveFair(t, s, "b", 100, 10)
		if numbers(run) != "4" {
			t.Fatalf("reserved %s, want 4 alone", numbers(run))
		}
		if _, err := s.Complete(ctx, []driver.Attempt{{ID: run[0].ID, Attempt: 1, Limit: "fair-limit"}}, false); err != nil {
			t.Fatal(err)
		}
		if f := lookup(t, s, 3); f.Job == nil || f.Job.Held || f.Job.FairKey != "h" || f.Job.FairSeq != 2 {
			t.Fatalf("the admitted job: %+v, want key h at place 2", f.Job)
		}
	})
}

// TestAFairAndRatedReservationLeavesOutFullWindows: a group whose rate
// key's window is full waits; the others take their turns.
func TestAFairAndRatedReservationLeavesOutFullWindows(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 3; n++ {
			j := grouped(n, "a", 0, "busy")
			j.RateKey, j.Rate = "fair-rate", driver.Rate{Max: 1, PerMs: 60_000}
			insert(t, s, j)
		}
		insert(t, s, grouped(4, "a", 1, "calm"), grouped(5, "a", 1, "calm"))
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate | driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := numbers(jobs); got != "1 4 5" {
			t.Fatalf("reserved %s, want 1 4 5: one of busy (its window then full), both of calm", got)
		}
		if f := lookup(t, s, 2); f.Job == nil || f.Job.Attempts != 0 || f.Job.ReservedAt != 0 {
			t.Fatalf("the job over its limit: %+v, want it waiting, no attempt spent", f.Job)
		}
	})
}

// TestPruningGroupsChangesNoPlace: the prune forgets the groups behind
// their queue's round, keeps the one given the highest place, and the
// places given after it are those given without it.
func TestPruningGroupsChangesNoPlace(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		insert(t, s, grouped(1, "p", 0, "x"), grouped(2, "p", 0, "x"), grouped(3, "p", 0, "y"))
		reserveFair(t, s, "p", 100, 10)
		if err := s.PruneGroups(ctx); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(t.Name(), "/memory") {
			var keys []string
			rows, err := d.QueryContext(ctx, "SELECT key FROM queue_fair WHERE queue = 'p' ORDER BY key")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			rows.Close()
			if fmt.Sprint(keys) != "[x]" {
				t.Fatalf("queue_fair holds %v after the prune, want [x]: y's next place (2) is the round's", keys)
			}
		}
		if err := s.PruneGroups(ctx); err != nil {
			t.Fatal(err)
		}
		insert(t, s, grouped(4, "p", 0, "y"), grouped(5, "p", 0, "x"))
		jobs := reserveFair(t, s, "p", 100, 10)
		if numbers(jobs) != "4 5" || jobs[0].FairSeq != 3 || jobs[1].FairSeq != 3 {
			t.Fatalf("after the prune reserved %s (%+v), want 4 and 5 at place 3, as without it", numbers(jobs), jobs)
		}
	})
}

// TestABatchTakesThePlacesOneByOneWould: a batch gives each group's jobs
// the places inserts one by one would, in the order of the batch, from
// the round being served; in a unit of work too.
func TestABatchTakesThePlacesOneByOneWould(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		insert(t, s, grouped(1, "a", 0, "old"), grouped(2, "a", 0, "old"), grouped(3, "a", 0, "old"))
		reserveFair(t, s, "a", 100, 1) // the round is 2 now
		batch := []*driver.Job{grouped(10, "a", 0, "x"), grouped(11, "a", 0, "x"), grouped(12, "a", 0, "y"), newJob(13, "a", 0), grouped(14, "a", 0, "x"), grouped(15, "a", 0, "old")}
		if _, err := s.InsertMany(ctx, nil, batch, 1); err != nil {
			t.Fatal(err)
		}
		want := map[int]int64{10: 2, 11: 3, 12: 2, 13: 0, 14: 4, 15: 4}
		for n, seq := range want {
			if f := lookup(t, s, n); f.Job == nil || f.Job.FairSeq != seq {
				t.Errorf("job %d: %+v, want place %d", n, f.Job, seq)
			}
		}
		err := d.Transaction(ctx, func(ctx context.Context) error {
			_, err := s.InsertMany(ctx, db.UnitOfWorkFrom(ctx), []*driver.Job{grouped(20, "a", 0, "y"), grouped(21, "a", 0, "z"), grouped(22, "a", 0, "y")}, 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for n, seq := range map[int]int64{20: 3, 21: 2, 22: 4} {
			if f := lookup(t, s, n); f.Job == nil || f.Job.FairSeq != seq {
				t.Errorf("job %d of the unit of work: %+v, want place %d", n, f.Job, seq)
			}
		}
	})
}

// TestASearchFromAPlaceLeavesOutTheLowerOnes: a Fair reservation from a
// place leaves out the jobs with a key of lower places (PostgreSQL's
// search then starts past the index entries of those taken), and Behind
// finds those due; the memory driver leaves out none.
func TestASearchFromAPlaceLeavesOutTheLowerOnes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		_, memory := s.(*memdriver.Driver)
		insert(t, s, grouped(1, "a", 500, "x"), grouped(2, "a", 0, "x"), grouped(3, "a", 0, "x"))
		behind := func(now, placeFrom int64, want bool) {
			t.Helper()
			want = want && !memory
			if got, err := s.Behind(ctx, "a", now, 0, placeFrom, nil); got != want || err != nil {
				t.Fatalf("Behind(now %d, place %d) = %v, %v; want %v", now, placeFrom, got, err, want)
			}
		}
		behind(100, 2, false) // place 1 is not due yet
		behind(100, 1, false) // nothing before place 1
		behind(600, 2, true)  // place 1, due now
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10, PlaceFrom: 3})
		if err != nil {
			t.Fatal(err)
		}
		want := "3"
		if memory {
			want = "2 3"
		}
		if got := numbers(jobs); got != want {
			t.Fatalf("a search from place 3 reserved %s, want %s", got, want)
		}
		behind(100, 3, !memory) // place 2 waits, due
	})
}

// TestFairnessAgainstABruteForceReference: random jobs of random groups
// (some without one, some due later), dispatched one by one and in
// batches between fair reservations of random sizes as time goes on,
// come out exactly in the order of a reference that gives places by the
// rule (the group's next, or the queue's lowest waiting place; with none
// waiting, the next after the last given) and takes the due jobs by place (0 for those
// without a group), then due time, then id.
func TestFairnessAgainstABruteForceReference(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for seed := range uint64(3) {
			fairAgainstReference(t, s, fmt.Sprint("q", seed), int(seed)*10_000, rand.New(rand.NewPCG(17, seed)))
		}
	})
}

// fairAgainstReference runs TestFairnessAgainstABruteForceReference on
// queue with r, its jobs numbered from first.
func fairAgainstReference(t *testing.T, s driver.Driver, queue string, first int, r *rand.Rand) {
	{
		next := map[string]int64{}
		var last int64 // the highest next place given, 0 for none
		var left []*driver.Job
		place := func(j *driver.Job) int64 {
			if j.FairKey == "" {
				return 0
			}
			round := int64(1)
			if last > 0 {
				round = last
			}
			lowest := int64(-1)
			for _, w := range left {
				if w.FairKey != "" && (lowest < 0 || w.FairSeq < lowest) {
					lowest = w.FairSeq
				}
			}
			if lowest >= 0 {
				round = lowest
			}
			seq := round
			if n, ok := next[j.FairKey]; ok {
				seq = max(n, round)
			}
			next[j.FairKey], last = seq+1, max(last, seq+1)
			return seq
		}
		n := first
		for now := int64(0); now < 3000; now += 50 {
			var batch []*driver.Job
			for range r.IntN(8) {
				n++
				j := newJob(n, queue, now+int64(r.IntN(3))*int64(r.IntN(200)))
				if r.IntN(5) > 0 {
					j.FairKey = fmt.Sprint("g", r.IntN(6))
				}
				batch = append(batch, j)
			}
			if r.IntN(2) == 0 {
				insert(t, s, batch...)
			} else if len(batch) > 0 {
				if _, err := s.InsertMany(ctx, nil, batch, now); err != nil {
					t.Fatal(err)
				}
			}
			for _, j := range batch {
				seq := place(j)
				left = append(left, &driver.Job{ID: j.ID, AvailableAt: j.AvailableAt, FairKey: j.FairKey, FairSeq: seq})
			}
			limit := 1 + r.IntN(5)
			got := reserveFair(t, s, queue, now, limit)
			var due []*driver.Job
			for _, j := range left {
				if j.AvailableAt <= now {
					due = append(due, j)
				}
			}
			slices.SortFunc(due, func(a, b *driver.Job) int {
				return cmp.Or(cmp.Compare(a.FairSeq, b.FairSeq), cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
			})
			want := due[:min(limit, len(due))]
			if numbers(got) != numbers(want) {
				t.Fatalf("at %d, limit %d: reserved %s, want %s", now, limit, numbers(got), numbers(want))
			}
			for i := range want {
				if got[i].FairSeq != want[i].FairSeq {
					t.Fatalf("at %d: job %s has place %d, want %d", now, numbers(want[i:i+1]), got[i].FairSeq, want[i].FairSeq)
				}
				left = slices.DeleteFunc(left, func(j *driver.Job) bool { return j.ID == want[i].ID })
			}
		}
	}
}
