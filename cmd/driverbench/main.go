// Command driverbench measures the embedded SQLite drivers Navree could use,
// so the default can be chosen by measurement rather than by reputation.
//
// Exactly one driver is linked per binary, chosen by build tag:
//
//	go run -tags modernc .   // modernc.org/sqlite (pure Go, transpiled C)
//	go run -tags mattn .     // github.com/mattn/go-sqlite3 (cgo)
//	go run -tags ncruces .   // github.com/ncruces/go-sqlite3 (pure Go, wasm2go)
//
// For synchronous=NORMAL and synchronous=FULL it verifies that every pragma
// took on every pooled connection and that Begin issues BEGIN IMMEDIATE, then
// measures (median of -runs runs of -d each, every run on a fresh file):
//
//   - insert tx: BEGIN IMMEDIATE; INSERT one job; COMMIT, from 1 and 4 goroutines;
//   - reserve+delete: claim the oldest ready job with UPDATE … RETURNING, then
//     DELETE it (both autocommit) from a 50k-row queue, 1 and 4 goroutines;
//   - multi-process: 4 copies of this binary each run 500 read-increment-insert
//     transactions on one file; the parent checks nothing was lost.
//
// SQLITE_BUSY/SQLITE_LOCKED errors that reach the caller are counted, not
// retried silently; with busy_timeout=5000 and BEGIN IMMEDIATE they should be 0.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// poolSize is the database/sql pool size used for every in-process workload.
const poolSize = 4

const (
	schemaJobs = `CREATE TABLE jobs (
	id TEXT PRIMARY KEY,
	queue TEXT NOT NULL,
	payload TEXT NOT NULL,
	available_at INTEGER NOT NULL,
	reserved_at INTEGER)`
	schemaReady = `CREATE INDEX jobs_ready ON jobs (queue, available_at, id) WHERE reserved_at IS NULL`
	insertSQL   = `INSERT INTO jobs (id, queue, payload, available_at) VALUES (?, ?, ?, ?)`
	reserveSQL  = `UPDATE jobs SET reserved_at = ? WHERE id = (SELECT id FROM jobs
	WHERE queue = 'default' AND reserved_at IS NULL ORDER BY available_at, id LIMIT 1) RETURNING id`
	deleteSQL = `DELETE FROM jobs WHERE id = ?`
)

// payload is a ~100 byte job body.
var payload = `{"type":"email.send","to":"someone@example.com","template":"welcome","attempt":1,"pad":"xxxxxxxx"}`

// errDrained reports that the reserve workload ran out of ready jobs.
var errDrained = errors.New("queue drained")

var (
	dur       = flag.Duration("d", 3*time.Second, "duration of one timed run")
	runs      = flag.Int("runs", 3, "runs per measurement; the median is reported")
	prefill   = flag.Int("prefill", 50000, "rows in the queue before reserve+delete starts")
	procs     = flag.Int("procs", 4, "child processes in the multi-process check")
	perProc   = flag.Int("txs", 500, "transactions per child process")
	modes     = flag.String("modes", "NORMAL,FULL", "comma-separated synchronous modes to measure")
	baseDir   = flag.String("dir", "", "directory for the temporary databases (default: $TMPDIR)")
	child     = flag.Bool("child", false, "internal: run as a multi-process worker")
	childDB   = flag.String("child-db", "", "internal: database path for -child")
	childNum  = flag.Int("child-id", 0, "internal: worker number for -child")
	childSync = flag.String("sync", "NORMAL", "internal: synchronous mode for -child")
	startAt   = flag.Int64("start", 0, "internal: unix nanoseconds at which -child starts")
)

func main() {
	flag.Parse()
	if driverName == "" {
		fmt.Fprintln(os.Stderr, "driverbench: build with exactly one of -tags modernc, -tags mattn, -tags ncruces")
		os.Exit(2)
	}
	if *child {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "driverbench:", err)
		os.Exit(1)
	}
}

// row is one line of the results table.
type row struct {
	sync                       string
	fsyncs                     float64
	ins1, ins4, res1, res4     stat
	mpWall                     time.Duration
	mpBusy, inBusy             int64
	mpCounter, mpLogs, mpDistn int
}

func run() error {
	fmt.Printf("driver %s %s (sql driver name %q), SQLite %s, %s %s/%s, GOMAXPROCS=%d, %s\n",
		driverModule, moduleVersion(driverModule), driverName, sqliteVersion(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Printf("each number: median ops/s of %d runs x %s, fresh file per run\n\n", *runs, *dur)

	var rows []row
	for mode := range strings.SplitSeq(*modes, ",") {
		fmt.Printf("== synchronous=%s ==\n", mode)
		if err := verify(mode); err != nil {
			return err
		}
		r := row{sync: mode}
		var err error
		if r.fsyncs, err = fsyncRate(); err != nil {
			return err
		}
		fmt.Printf("raw disk baseline: %.0f write+fsync/s\n", r.fsyncs)
		steps := []struct {
			name    string
			workers int
			prefill int
			op      func(*sql.DB, *rand.Rand) error
			out     *stat
		}{
			{"insert tx, 1 goroutine", 1, 0, insertTx, &r.ins1},
			{"insert tx, 4 goroutines", 4, 0, insertTx, &r.ins4},
			{"reserve+delete, 1 goroutine", 1, *prefill, reserveDelete, &r.res1},
			{"reserve+delete, 4 goroutines", 4, *prefill, reserveDelete, &r.res4},
		}
		for _, s := range steps {
			if *s.out, err = measure(mode, s.workers, s.prefill, s.op); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			r.inBusy += s.out.busy
			fmt.Printf("%-30s %s\n", s.name, s.out)
		}
		if err := multiProcess(mode, &r); err != nil {
			return fmt.Errorf("multi-process: %w", err)
		}
		rows = append(rows, r)
		fmt.Println()
	}

	fmt.Printf("| driver | sync | raw fsync/s | insert tx 1g | insert tx 4g | reserve+delete 1g | reserve+delete 4g | %d procs x %d tx (wall) | BUSY escaped (in-proc / multi-proc) |\n", *procs, *perProc)
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %.0f | %.0f | %.0f | %s | %s | %s | %d / %d |\n", driverModule, r.sync, r.fsyncs,
			r.ins1.median, r.ins4.median, r.res1.cell(), r.res4.cell(), r.mpWall.Round(time.Millisecond), r.inBusy, r.mpBusy)
	}
	return nil
}

// open opens path with every pragma set per connection through the DSN.
func open(path, mode string, conns int) (*sql.DB, error) {
	db, err := sql.Open(driverName, dsn(path, mode))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// freshDB creates a new database file with the jobs schema in a new temp dir.
// cleanup closes it and removes the directory.
func freshDB(mode string, conns int) (db *sql.DB, path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp(*baseDir, "driverbench-")
	if err != nil {
		return nil, "", nil, err
	}
	path = filepath.Join(dir, "bench.db")
	if db, err = open(path, mode, conns); err == nil {
		for _, q := range []string{schemaJobs, schemaReady} {
			if _, err = db.Exec(q); err != nil {
				break
			}
		}
	}
	cleanup = func() {
		if db != nil {
			db.Close()
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return db, path, cleanup, nil
}

// verify checks, on poolSize simultaneously held connections, that every
// pragma took, that Begin takes the write lock at once (BEGIN IMMEDIATE), and
// that the reserve query uses the partial index. It prints what it read.
func verify(mode string) error {
	db, _, cleanup, err := freshDB(mode, poolSize)
	if err != nil {
		return err
	}
	defer cleanup()
	ctx := context.Background()
	wantSync := map[string]int{"NORMAL": 1, "FULL": 2}[mode]

	conns := make([]*sql.Conn, poolSize)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			return err
		}
	}
	for i, c := range conns {
		var jm string
		var sy, bt, fk int
		for _, p := range []struct {
			q   string
			dst any
		}{{"PRAGMA journal_mode", &jm}, {"PRAGMA synchronous", &sy}, {"PRAGMA busy_timeout", &bt}, {"PRAGMA foreign_keys", &fk}} {
			if err := c.QueryRowContext(ctx, p.q).Scan(p.dst); err != nil {
				return fmt.Errorf("%s: %w", p.q, err)
			}
		}
		fmt.Printf("conn %d: journal_mode=%s synchronous=%d busy_timeout=%d foreign_keys=%d\n", i, jm, sy, bt, fk)
		if jm != "wal" || sy != wantSync || bt != 5000 || fk != 1 {
			return fmt.Errorf("conn %d: pragmas did not take (want wal/%d/5000/1)", i, wantSync)
		}
	}
	for _, c := range conns {
		c.Close()
	}

	// Begin must hold the write lock before any statement runs: a second
	// connection with no busy timeout then fails BEGIN IMMEDIATE with BUSY.
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	other, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return err
	}
	_, err = other.ExecContext(ctx, "BEGIN IMMEDIATE")
	if err == nil {
		other.ExecContext(ctx, "ROLLBACK")
		return errors.New("db.Begin did not take the write lock: _txlock=immediate did not take")
	}
	if !isBusy(err) {
		return fmt.Errorf("probing the write lock: %w", err)
	}
	fmt.Printf("db.Begin holds the write lock before the first statement (BEGIN IMMEDIATE): ok (%v)\n", err)
	if _, err := other.ExecContext(ctx, "PRAGMA busy_timeout = 5000"); err != nil {
		return err
	}

	rows, err := db.Query("EXPLAIN QUERY PLAN "+reserveSQL, 0)
	if err != nil {
		return err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return err
		}
		plan = append(plan, detail)
	}
	fmt.Printf("reserve plan: %s\n", strings.Join(plan, "; "))
	if !strings.Contains(strings.Join(plan, ";"), "jobs_ready") {
		return errors.New("reserve query does not use the jobs_ready index")
	}
	return rows.Err()
}

// stat summarises the runs of one measurement.
type stat struct {
	median  float64
	all     []float64
	busy    int64
	drained bool
}

func (s stat) String() string {
	vals := make([]string, len(s.all))
	for i, v := range s.all {
		vals[i] = fmt.Sprintf("%.0f", v)
	}
	str := fmt.Sprintf("median %8.0f ops/s  runs [%s]  busy escaped %d", s.median, strings.Join(vals, " "), s.busy)
	if s.drained {
		str += "  (queue drained before the deadline in some run)"
	}
	return str
}

// cell formats the median for the table, starred if the queue ran dry.
func (s stat) cell() string {
	if s.drained {
		return fmt.Sprintf("%.0f*", s.median)
	}
	return fmt.Sprintf("%.0f", s.median)
}

// fsyncRate measures how many 4 KiB write+fsync pairs per second the disk
// under the temp dir sustains for one second: the ceiling for commits with
// synchronous=FULL, and a way to tell disk noise from driver differences.
func fsyncRate() (float64, error) {
	f, err := os.CreateTemp(*baseDir, "driverbench-fsync-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	settle()
	n, start := 0, time.Now()
	for ; time.Since(start) < time.Second; n++ {
		if _, err := f.WriteAt(buf, int64(n%16)*4096); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// measure runs op from workers goroutines on a fresh file for *dur, *runs
// times, and returns the median rate. BUSY errors are counted and the loop
// goes on; any other error aborts.
func measure(mode string, workers, prefillRows int, op func(*sql.DB, *rand.Rand) error) (stat, error) {
	var s stat
	for range *runs {
		rate, busy, drained, err := measureOnce(mode, workers, prefillRows, op)
		if err != nil {
			return s, err
		}
		s.all = append(s.all, rate)
		s.busy += busy
		s.drained = s.drained || drained
	}
	sorted := slices.Clone(s.all)
	slices.Sort(sorted)
	s.median = sorted[len(sorted)/2]
	return s, nil
}

func measureOnce(mode string, workers, prefillRows int, op func(*sql.DB, *rand.Rand) error) (rate float64, busy int64, drained bool, err error) {
	db, _, cleanup, err := freshDB(mode, poolSize)
	if err != nil {
		return 0, 0, false, err
	}
	defer cleanup()
	if err := fill(db, prefillRows); err != nil {
		return 0, 0, false, err
	}
	settle()

	var ops, busyN atomic.Int64
	var drainedFlag atomic.Bool
	var firstErr error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(*dur)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for time.Now().Before(deadline) && !drainedFlag.Load() {
				switch err := op(db, r); {
				case err == nil:
					ops.Add(1)
				case errors.Is(err, errDrained):
					drainedFlag.Store(true)
				case isBusy(err):
					busyN.Add(1)
				default:
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return float64(ops.Load()) / elapsed.Seconds(), busyN.Load(), drainedFlag.Load(), firstErr
}

// settle flushes the page cache (sync(2)) so that a timed run does not pay for
// the writeback of the run before it; without it, results depended on order.
func settle() { syscall.Sync() }

// fill inserts n ready jobs in one transaction.
func fill(db *sql.DB, n int) error {
	if n == 0 {
		return nil
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(insertSQL)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Now().UnixMilli()
	for i := range n {
		if _, err := stmt.Exec(newID(r), "default", payload, base+int64(i)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// newID returns a random 32-hex-digit job id, like a UUID without dashes.
func newID(r *rand.Rand) string {
	return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
}

// insertTx is one small write transaction: BEGIN IMMEDIATE; INSERT; COMMIT.
func insertTx(db *sql.DB, r *rand.Rand) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec(insertSQL, newID(r), "default", payload, time.Now().UnixMilli()); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// reserveDelete claims the oldest ready job and deletes it, both autocommit.
func reserveDelete(db *sql.DB, _ *rand.Rand) error {
	var id string
	err := db.QueryRow(reserveSQL, time.Now().UnixMilli()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return errDrained
	}
	if err != nil {
		return err
	}
	_, err = db.Exec(deleteSQL, id)
	return err
}

// multiProcess runs *runs rounds of *procs child processes on one file and
// checks the counter they increment; it records the median wall time.
func multiProcess(mode string, r *row) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var walls []time.Duration
	for range *runs {
		db, path, cleanup, err := freshDB(mode, 1)
		if err != nil {
			return err
		}
		err = func() error {
			defer cleanup()
			for _, q := range []string{
				`CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`,
				`CREATE TABLE log (child INTEGER NOT NULL, seq INTEGER NOT NULL, n INTEGER NOT NULL)`,
				`INSERT INTO counter (id, n) VALUES (1, 0)`,
			} {
				if _, err := db.Exec(q); err != nil {
					return err
				}
			}
			settle()
			start := time.Now().Add(300 * time.Millisecond)
			outs := make([]strings.Builder, *procs)
			var wg sync.WaitGroup
			errs := make([]error, *procs)
			for i := range *procs {
				wg.Go(func() {
					cmd := exec.Command(exe, "-child", "-child-db", path, "-child-id", fmt.Sprint(i),
						"-sync", mode, "-txs", fmt.Sprint(*perProc), "-start", fmt.Sprint(start.UnixNano()))
					cmd.Stdout, cmd.Stderr = &outs[i], os.Stderr
					errs[i] = cmd.Run()
				})
			}
			wg.Wait()
			wall := time.Since(start)
			if err := errors.Join(errs...); err != nil {
				return err
			}
			for i := range outs {
				var b int64
				if _, err := fmt.Sscanf(outs[i].String(), "busy=%d", &b); err != nil {
					return fmt.Errorf("child %d output %q: %w", i, outs[i].String(), err)
				}
				r.mpBusy += b
			}
			if err := db.QueryRow(`SELECT (SELECT n FROM counter WHERE id = 1), count(*), count(DISTINCT n) FROM log`).
				Scan(&r.mpCounter, &r.mpLogs, &r.mpDistn); err != nil {
				return err
			}
			want := *procs * *perProc
			fmt.Printf("multi-process %dx%d: counter=%d log rows=%d distinct n=%d wall=%s\n",
				*procs, *perProc, r.mpCounter, r.mpLogs, r.mpDistn, wall.Round(time.Millisecond))
			if r.mpCounter != want || r.mpLogs != want || r.mpDistn != want {
				return fmt.Errorf("lost updates: want %d everywhere", want)
			}
			walls = append(walls, wall)
			return nil
		}()
		if err != nil {
			return err
		}
	}
	slices.Sort(walls)
	r.mpWall = walls[len(walls)/2]
	fmt.Printf("multi-process: median wall %s, busy escaped %d\n", r.mpWall.Round(time.Millisecond), r.mpBusy)
	return nil
}

// runChild is one multi-process worker: *perProc transactions that read the
// counter, increment it and log the value. A BUSY error is counted and the
// transaction retried, so the final count stays checkable.
func runChild() error {
	db, err := open(*childDB, *childSync, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		return err
	}
	time.Sleep(time.Until(time.Unix(0, *startAt)))
	var busy int
	for seq := 0; seq < *perProc; {
		err := func() error {
			tx, err := db.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var n int
			if err := tx.QueryRow(`SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
				return err
			}
			if _, err := tx.Exec(`UPDATE counter SET n = ? WHERE id = 1`, n+1); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO log (child, seq, n) VALUES (?, ?, ?)`, *childNum, seq, n+1); err != nil {
				return err
			}
			return tx.Commit()
		}()
		switch {
		case err == nil:
			seq++
		case isBusy(err):
			busy++
		default:
			return err
		}
	}
	fmt.Printf("busy=%d\n", busy)
	return nil
}

// moduleVersion returns the version of module path linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown)"
}

// sqliteVersion asks the linked driver for sqlite_version().
func sqliteVersion() string {
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT sqlite_version()").Scan(&v); err != nil {
		return err.Error()
	}
	return v
}

// cpuModel returns the first "model name" line of /proc/cpuinfo, if any.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
