// Package plan holds a reservation as data: the searches it runs over
// the waiting jobs, each a list of filters with named arguments, and the
// order of their jobs together; and renders each shape once, in the
// words of SQLite or PostgreSQL. What a reservation does (its Shape)
// picks its searches and filters; nothing rewrites a statement's text
// after it is rendered.
//
// A filter names its arguments (@queue, @now, …: see Arg); rendering
// numbers them, a name once however often it is used, so that a
// statement's arguments are bound by name (Statement.Bind), never by
// counting question marks.
package plan

import (
	"strconv"
	"strings"
	"sync"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Shape is what a reservation does, which picks its statement.
type Shape struct {
	// Features are the features its search does: each adds its Part
	// (see control.Parts).
	Features driver.Features
	// Only takes only the jobs of the types of @names.
	Only bool
	// Size is the limit on PostgreSQL, a constant of the statement, for
	// a limit up to MaxSize (see SizeFor); 0 for @limit, which SQLite's
	// statements always take.
	Size int
}

// MaxSize is the largest limit PostgreSQL's reservations write as a
// constant: every count up to 16, the free handlers of a small worker.
//
// With LIMIT a parameter, the plan PostgreSQL keeps for a prepared
// statement must do for any limit, and it assumes a tenth of the rows.
// Against the plan made for 4 jobs it looked dear, so the server planned
// the statement anew at every execution (plan_cache_mode auto); a
// constant let it keep one plan, made for that size. Since every
// argument of a search is a subquery (see Render), the plan made for the
// values given no longer sees the limit either, and a larger
// reservation, its limit a parameter in one statement, keeps its plan
// too; a reservation of 100 cut into statements of 64, 32 and 4 cost
// three round trips and made 100 handlers work at 0.62 of the rate
// (docs/benchmarks.md).
const MaxSize = 16

// SizeFor is the Size of a reservation of limit jobs on PostgreSQL:
// limit itself up to MaxSize, else 0 for the parameter.
func SizeFor(limit int) int {
	if limit <= MaxSize {
		return limit
	}
	return 0
}

// Search is one search of a reservation: the waiting jobs of the queue
// (not reserved, and of no feature the search does not do) that pass its
// filters, in its order, as many as the limit less what
// the searches before it took (on PostgreSQL; on SQLite each takes up to
// the limit and the first of them all together are reserved).
type Search struct {
	// Name is what the statement calls its jobs (a common table
	// expression on PostgreSQL).
	Name string
	// Index is the index SQLite must search by: its planner, seeing an
	// empty table's statistics, would take the jobs with a priority by
	// jobs_waiting and sort them all. "" lets it choose.
	Index string
	// Where are the search's filters besides those of every search, each
	// with named arguments.
	Where []string
	// Order is the order it takes its jobs in.
	Order string
}

// Reservation is a reservation's plan: its searches, in the order
// PostgreSQL runs them, and the order of their jobs together.
type Reservation struct {
	Shape    Shape
	Searches []Search
	// Order is the order of the jobs of all searches together, for a
	// plan of more than one, and Columns what each search returns for it
	// (id first): the part that adds a second search sets both.
	Order, Columns string
}

// The filters of every search of a reservation: features is the test
// that takes nothing while a feature the search does not do is recorded
// of its queue (queue_features; see driver.Features), read once a
// statement (on SQLite in the search's LIMIT); waiting are the queue's
// jobs not reserved.
const (
	features = "NOT EXISTS (SELECT 1 FROM queue_features WHERE queue = @queue AND (feature & @does) = 0)"
	waiting  = "queue = @queue AND reserved_at IS NULL"
	// fromBound leaves out those due before @from: see driver.Reservation.From.
	fromBound = "available_at >= @from"
)

// Due is the filter of the jobs due by @now, which every search by due
// time has.
const Due = "available_at <= @now"

// Unkeyed is the filter of the jobs without a fairness place, which the
// search by due time has: its index, jobs_waiting, holds only those
// (migration 0022), and a search that does not do fairness takes nothing
// while its queue holds jobs with a key (see driver.Features), so it
// leaves none out.
const Unkeyed = "fair_seq IS NULL"

// byDue is the order of the search by due time.
const byDue = "available_at, id"

// A Part is what a feature adds to a reservation's plan, when its shape
// does Feature: searches of its own, or filters on every search. The
// features' parts are in their folders (queue/internal/control/...),
// listed in order by control.Parts.
type Part struct {
	Name    string
	Feature driver.Features
	Add     func(d sqlkit.Dialect, p *Reservation)
}

// Of returns the plan of a reservation of shape on d: the search of the
// waiting jobs without a fairness key by due time, from @from to @now, what each of parts whose
// feature the shape does adds, in order (a part sees the searches of
// those before it), and last Only's filter on every search.
func Of(d sqlkit.Dialect, shape Shape, parts []Part) Reservation {
	p := Reservation{Shape: shape, Searches: []Search{{Name: "u", Where: []string{Unkeyed, fromBound, Due}, Order: byDue}}}
	for _, part := range parts {
		if shape.Features&part.Feature != 0 {
			part.Add(d, &p)
		}
	}
	if shape.Only {
		only(d, &p)
	}
	return p
}

// only: every search takes only the jobs of the types of @names.
func only(d sqlkit.Dialect, p *Reservation) {
	for i := range p.Searches {
		p.Searches[i].Where = append([]string{names(d)}, p.Searches[i].Where...)
	}
}

// where is the filter of s: the queue's jobs waiting, then its own.
func (p Reservation) where(s Search) string {
	return waiting + " AND " + strings.Join(s.Where, " AND ")
}

// names is Only's filter in d's words.
func names(d sqlkit.Dialect) string {
	if d.PG {
		return "name = ANY(@names::text[])"
	}
	return "name IN (SELECT value FROM json_each(@names))"
}

// lazy is what PostgreSQL's reservation starts with: its transaction
// commits without waiting for the disk (lost in a crash of the server,
// its jobs run again, as at least once allows; a later commit that waits
// makes it durable, the log being written in order).
const lazy = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true))"

// Text is the statement of p in d's words, before its arguments are
// numbered (see Render), returning returning (jobs' columns).
func (p Reservation) Text(d sqlkit.Dialect, returning string) string {
	if d.PG {
		return p.postgres(returning)
	}
	return p.sqlite(returning)
}

// sqlite: each search of up to the limit, the first of them together.
func (p Reservation) sqlite(returning string) string {
	search := func(s Search, columns string) string {
		from := "jobs"
		if s.Index != "" {
			from += " INDEXED BY " + s.Index
		}
		// The features test is the search's LIMIT: SQLite evaluates it
		// once, before the search, and a search it turns away reads no
		// row, where as a term of WHERE it walked the whole range to
		// reject each row (43 ms over 40,000 jobs, against 6 µs). +@limit
		// is an expression: given a bare parameter, SQLite plans for the
		// value bound and prepares the statement again whenever another
		// is (sqlite3ExprIsInteger), and a reservation's limit, the free
		// handlers, changes from one search to the next.
		return "SELECT " + columns + " FROM " + from + " WHERE " + p.where(s) + " ORDER BY " + s.Order +
			" LIMIT CASE WHEN " + features + " THEN +@limit ELSE 0 END"
	}
	ids := ""
	if len(p.Searches) == 1 {
		ids = search(p.Searches[0], "id")
	} else {
		parts := make([]string, len(p.Searches))
		for i, s := range p.Searches {
			parts[i] = "SELECT * FROM (" + search(s, p.Columns) + ")"
		}
		ids = "SELECT id FROM (" + strings.Join(parts, " UNION ALL ") + ") ORDER BY " + p.Order + " LIMIT +@limit"
	}
	return "UPDATE jobs SET reserved_at = @at, reserved_by = @by, attempts = attempts + 1 WHERE id IN (" + ids + ") RETURNING " + returning
}

// postgres: the searches in turn, each of what the ones before left of
// the size, locking only what it takes.
func (p Reservation) postgres(returning string) string {
	size := "@limit"
	if p.Shape.Size > 0 {
		size = strconv.Itoa(p.Shape.Size)
	}
	update := " UPDATE jobs SET reserved_at = @at, reserved_by = @by, attempts = jobs.attempts + 1 FROM lazy WHERE jobs.id = ANY(ARRAY("
	returning = " RETURNING " + prefixed("jobs.", returning)
	search := func(s Search, columns, limit string) string {
		// The features test is a filter PostgreSQL evaluates once, as the
		// search's one-time filter: a search it turns away reads no row.
		return "SELECT " + columns + " FROM jobs WHERE " + features + " AND " + p.where(s) + " ORDER BY " + s.Order + " LIMIT " + limit + " FOR UPDATE SKIP LOCKED"
	}
	if len(p.Searches) == 1 {
		return lazy + update + search(p.Searches[0], "id", size) + "))" + returning
	}
	var ctes, ids []string
	taken := ""
	for _, s := range p.Searches {
		limit := size
		if taken != "" {
			limit = "(" + size + " - (" + taken + "))"
			taken += " + "
		}
		ctes = append(ctes, s.Name+" AS ("+search(s, p.Columns, limit)+")")
		ids = append(ids, "SELECT id FROM "+s.Name)
		taken += "(SELECT count(*) FROM " + s.Name + ")"
	}
	return lazy + ", " + strings.Join(ctes, ", ") + update + strings.Join(ids, " UNION ALL ") + "))" + returning
}

// prefixed qualifies each column of a list with prefix.
func prefixed(prefix, list string) string {
	cols := strings.Split(list, ", ")
	for i, c := range cols {
		cols[i] = prefix + c
	}
	return strings.Join(cols, ", ")
}

// Statements renders the reservations of one database, each shape once,
// and keeps them.
type Statements struct {
	dialect   sqlkit.Dialect
	returning string
	parts     []Part
	shapes    sync.Map // Shape -> Statement
}

// New returns the reservations of d with the features' parts, returning
// returning, the columns a reserved job is read from.
func New(d sqlkit.Dialect, parts []Part, returning string) *Statements {
	return &Statements{dialect: d, parts: parts, returning: returning}
}

// Reservation returns the statement of a reservation of shape.
func (s *Statements) Reservation(shape Shape) Statement {
	if st, ok := s.shapes.Load(shape); ok {
		return st.(Statement)
	}
	st := Render(s.dialect, Of(s.dialect, shape, s.parts).Text(s.dialect, s.returning))
	s.shapes.Store(shape, st)
	return st
}

// The probes of Behind, with Only's filter or not: a job not reserved of
// the queue due by @now and before the bound @from, without a fairness
// key; and one with a key whose place is before @place.
const (
	behind      = "SELECT 1 FROM jobs WHERE " + waiting + " AND available_at < @from AND available_at <= @now AND " + Unkeyed
	placeBehind = "SELECT 1 FROM jobs WHERE " + waiting + " AND fair_seq IS NOT NULL AND fair_seq < @place AND available_at <= @now"
)

// Behind returns the probe of jobs due before a worker's bound (place
// false) or before its fairness cursor (place true), with Only's filter
// when only.
func (s *Statements) Behind(place, only bool) Statement {
	key := behindKey{place, only}
	if st, ok := s.shapes.Load(key); ok {
		return st.(Statement)
	}
	q := behind
	if place {
		q = placeBehind
	}
	if only {
		q += " AND " + names(s.dialect)
	}
	st := Render(s.dialect, q+" LIMIT 1")
	s.shapes.Store(key, st)
	return st
}

// behindKey names a probe of Behind among the shapes.
type behindKey struct{ place, only bool }
