package fair_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

// grouped is a job of queue in the group key.
func grouped(n int, queue string, availableAt int64, key string) *driver.Job {
	j := drivertest.Job(n, queue, availableAt)
	j.FairKey = key
	return j
}

// reserveFair reserves up to limit jobs of queue at now, fairly.
func reserveFair(t *testing.T, s driver.Driver, queue string, now int64, limit int) []*driver.Job {
	t.Helper()
	return drivertest.Search(t, s, driver.FeatureFair, queue, now, limit)
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
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 6; n++ {
			drivertest.Insert(t, s, grouped(n, "a", 10, "tenant:big"))
		}
		drivertest.Insert(t, s,
			grouped(7, "a", 20, "tenant:b"), grouped(8, "a", 20, "tenant:b"),
			grouped(9, "a", 30, "tenant:c"),
			drivertest.Job(10, "a", 5), drivertest.Job(11, "a", 40),
			grouped(12, "a", 500, "tenant:b"), // delayed
			drivertest.Job(99, "other", 0),
		)
		if f, err := s.Features(ctx, "a", true); err != nil || f != driver.FeatureFair {
			t.Fatalf("Features(a) = %b, %v; want fairness", f, err)
		}
		if f, err := s.Features(ctx, "other", true); err != nil || f != 0 {
			t.Fatalf("Features(other) = %b, %v; want none: no job there has a key", f, err)
		}
		got := oneByOne(t, s, "a", 100, 6)
		if s := drivertest.Numbers(got); s != "10 11 1 7 9 2" {
			t.Fatalf("reserved %s, want 10 11 1 7 9 2: those without a key, then the first of each group, by due time", s)
		}
		if got[2].FairKey != "tenant:big" || got[2].FairSeq != 1 || got[3].FairSeq != 1 || got[5].FairSeq != 2 || got[0].FairKey != "" || got[0].FairSeq != 0 {
			t.Fatalf("places: %+v %+v %+v", got[2], got[3], got[5])
		}
		// A group that joins now takes the round being served (2: job 8's).
		drivertest.Insert(t, s, grouped(13, "a", 50, "tenant:d"))
		if f := drivertest.Lookup(t, s, 13); f.Job == nil || f.Job.FairKey != "tenant:d" || f.Job.FairSeq != 2 {
			t.Fatalf("Lookup of the joining job: %+v, want its key and place 2", f.Job)
		}
		if s := drivertest.Numbers(oneByOne(t, s, "a", 100, 100)); s != "8 13 3 4 5 6" {
			t.Fatalf("then reserved %s, want 8 13 3 4 5 6", s)
		}
		if s := drivertest.Numbers(reserveFair(t, s, "a", 500, 10)); s != "12" {
			t.Fatalf("at 500 reserved %s, want the delayed job 12", s)
		}

		// None waits: a group takes the place after the last given.
		drivertest.Insert(t, s, grouped(20, "z", 0, "x"), grouped(21, "z", 0, "x"), grouped(22, "z", 0, "x"))
		reserveFair(t, s, "z", 100, 10)
		drivertest.Insert(t, s, grouped(23, "z", 0, "y"), grouped(24, "z", 0, "x"))
		jobs := reserveFair(t, s, "z", 100, 10)
		if drivertest.Numbers(jobs) != "23 24" || jobs[0].FairSeq != 4 || jobs[1].FairSeq != 4 {
			t.Fatalf("after the queue emptied reserved %s (%+v), want 23 and 24 at place 4, the next after x's last", drivertest.Numbers(jobs), jobs)
		}
	})
}

// TestAFairBatchIsTheFirstInTurns: a batch takes the first jobs in the
// order of turns, and hands them back in it; jobs with a priority go by
// priority first.
func TestAFairBatchIsTheFirstInTurns(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 20; n++ {
			drivertest.Insert(t, s, grouped(n, "a", int64(n), "big"))
		}
		drivertest.Insert(t, s, grouped(21, "a", 30, "small"), grouped(22, "a", 31, "small"), grouped(23, "a", 32, "other"))
		high := grouped(24, "a", 40, "small")
		high.Priority = 5
		drivertest.Insert(t, s, high)
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority | driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 6})
		if err != nil {
			t.Fatal(err)
		}
		if got := drivertest.Numbers(jobs); got != "24 1 21 23 2 22" {
			t.Fatalf("reserved %s, want 24 (priority 5) 1 21 23 (round 1) 2 22 (round 2)", got)
		}
	})
}

// TestConcurrentFairReservationsNeverOverlap: reservations at once, in
// batches, take every job once.
func TestConcurrentFairReservationsNeverOverlap(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
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
		drivertest.ReservedOnce(t, s, driver.Reservation{Features: driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10}, 200)
	})
}

// TestPruningGroupsChangesNoPlace: the prune forgets the groups behind
// their queue's round, keeps the one given the highest place, and the
// places given after it are those given without it.
func TestPruningGroupsChangesNoPlace(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		drivertest.Insert(t, s, grouped(1, "p", 0, "x"), grouped(2, "p", 0, "x"), grouped(3, "p", 0, "y"))
		reserveFair(t, s, "p", 100, 10)
		if _, err := s.Upkeep(ctx, driver.UpkeepPlaces, 0, 0); err != nil {
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
		if _, err := s.Upkeep(ctx, driver.UpkeepPlaces, 0, 0); err != nil {
			t.Fatal(err)
		}
		drivertest.Insert(t, s, grouped(4, "p", 0, "y"), grouped(5, "p", 0, "x"))
		jobs := reserveFair(t, s, "p", 100, 10)
		if drivertest.Numbers(jobs) != "4 5" || jobs[0].FairSeq != 3 || jobs[1].FairSeq != 3 {
			t.Fatalf("after the prune reserved %s (%+v), want 4 and 5 at place 3, as without it", drivertest.Numbers(jobs), jobs)
		}
	})
}

// TestABatchTakesThePlacesOneByOneWould: a batch gives each group's jobs
// the places inserts one by one would, in the order of the batch, from
// the round being served; in a unit of work too.
func TestABatchTakesThePlacesOneByOneWould(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		drivertest.Insert(t, s, grouped(1, "a", 0, "old"), grouped(2, "a", 0, "old"), grouped(3, "a", 0, "old"))
		reserveFair(t, s, "a", 100, 1) // the round is 2 now
		batch := []*driver.Job{grouped(10, "a", 0, "x"), grouped(11, "a", 0, "x"), grouped(12, "a", 0, "y"), drivertest.Job(13, "a", 0), grouped(14, "a", 0, "x"), grouped(15, "a", 0, "old")}
		if _, err := s.InsertMany(ctx, nil, batch, 1); err != nil {
			t.Fatal(err)
		}
		want := map[int]int64{10: 2, 11: 3, 12: 2, 13: 0, 14: 4, 15: 4}
		for n, seq := range want {
			if f := drivertest.Lookup(t, s, n); f.Job == nil || f.Job.FairSeq != seq {
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
			if f := drivertest.Lookup(t, s, n); f.Job == nil || f.Job.FairSeq != seq {
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
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		_, memory := s.(*memdriver.Driver)
		drivertest.Insert(t, s, grouped(1, "a", 500, "x"), grouped(2, "a", 0, "x"), grouped(3, "a", 0, "x"))
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
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10, Marks: &driver.Marks{Place: 3}})
		if err != nil {
			t.Fatal(err)
		}
		want := "3"
		if memory {
			want = "2 3"
		}
		if got := drivertest.Numbers(jobs); got != want {
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
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
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
				j := drivertest.Job(n, queue, now+int64(r.IntN(3))*int64(r.IntN(200)))
				if r.IntN(5) > 0 {
					j.FairKey = fmt.Sprint("g", r.IntN(6))
				}
				batch = append(batch, j)
			}
			if r.IntN(2) == 0 {
				drivertest.Insert(t, s, batch...)
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
			if drivertest.Numbers(got) != drivertest.Numbers(want) {
				t.Fatalf("at %d, limit %d: reserved %s, want %s", now, limit, drivertest.Numbers(got), drivertest.Numbers(want))
			}
			for i := range want {
				if got[i].FairSeq != want[i].FairSeq {
					t.Fatalf("at %d: job %s has place %d, want %d", now, drivertest.Numbers(want[i:i+1]), got[i].FairSeq, want[i].FairSeq)
				}
				left = slices.DeleteFunc(left, func(j *driver.Job) bool { return j.ID == want[i].ID })
			}
		}
	}
}
