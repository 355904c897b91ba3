// Package sqlkit is what the database driver's parts share to speak to
// SQLite and PostgreSQL: a Dialect that puts a statement, written once in
// SQLite's words with ? for its arguments, in one database's words and
// keeps what it rendered; and the helpers that pass lists as one
// argument and read rows. It knows no table: the statements are the
// driver's, and its features'.
package sqlkit

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Dialect puts a statement in one database's words: SQLite reads a list
// from json_each; PostgreSQL from a jsonb array of uuids, compares ids as
// uuids, and numbers its placeholders. A driver has a Dialect of its own
// (Kept), which keeps what it rendered, so that a statement is rendered
// at its first use and never again.
type Dialect struct {
	render func(string) string
	list   string
	// PG says the database is PostgreSQL.
	PG   bool
	memo *sync.Map // rendering -> string
}

// The dialects, keeping nothing: a driver takes its own of them with
// Kept.
var (
	SQLite   = Dialect{render: sqliteWords, list: "(SELECT value FROM json_each(?))"}
	Postgres = Dialect{render: numbered, list: "(SELECT x::uuid FROM jsonb_array_elements_text(?::jsonb) AS x)", PG: true}
)

// Kept returns d keeping what it renders, in a memo of its own.
func (d Dialect) Kept() Dialect {
	d.memo = new(sync.Map)
	return d
}

// Rendered counts the statements d kept.
func (d Dialect) Rendered() int {
	n := 0
	if d.memo != nil {
		d.memo.Range(func(any, any) bool { n++; return true })
	}
	return n
}

// rendering names a statement rendered: how, and from what.
type rendering struct {
	how  string
	text string
}

// Rendering returns the statement text rendered by fn, how naming the
// way (two ways of rendering one text are kept apart), rendered at its
// first use and kept.
func (d Dialect) Rendering(how, text string, fn func(string) string) string {
	if d.memo == nil {
		return fn(text)
	}
	r := rendering{how, text}
	if s, ok := d.memo.Load(r); ok {
		return s.(string)
	}
	s := fn(text)
	d.memo.Store(r, s)
	return s
}

// Render is s with its placeholders in d's words, not kept: for a
// statement rendered once as the program starts, or one built for its
// count of rows. Anything rendered as the driver runs goes through
// Words, Q, Keys, Clocked or Rendering, which keep it.
func (d Dialect) Render(s string) string { return d.render(s) }

// Words is s with its placeholders in d's words.
func (d Dialect) Words(s string) string { return d.Rendering("words", s, d.render) }

// Q is a statement with LIST for a list of ids (List) in d's words, its
// ids compared as uuids on PostgreSQL.
func (d Dialect) Q(s string) string {
	return d.Rendering("q", s, func(s string) string {
		s = strings.ReplaceAll(s, "LIST", d.list)
		if d.PG {
			s = strings.ReplaceAll(s, "id = ?", "id = ?::uuid")
			s = strings.ReplaceAll(s, "AND id < ?", "AND id < ?::uuid")
		}
		return d.render(s)
	})
}

// Keys is a statement with KEYS for a list of text keys (List) in d's
// words.
func (d Dialect) Keys(s string) string {
	return d.Rendering("keys", s, func(s string) string {
		if d.PG {
			return d.render(strings.ReplaceAll(s, "KEYS", "(SELECT jsonb_array_elements_text(?::jsonb))"))
		}
		return strings.ReplaceAll(s, "KEYS", "(SELECT value FROM json_each(?))")
	})
}

// Clocked is s with AT the time of the clock of reservations (ClockAt),
// in d's words.
func (d Dialect) Clocked(s string) string {
	return d.Rendering("clocked", s, func(s string) string { return d.render(strings.ReplaceAll(s, "AT", d.ClockAt())) })
}

// Setting reads the whole-number setting key of a job's controls record
// (driver.Controls) in the column controls of table. A record that does
// not read is no setting rather than an error: one row written by hand
// must not fail the statement of every other. (The pattern holds no
// question mark, which Render would number.)
func (d Dialect) Setting(table, key string) string {
	if d.PG {
		return "substring(" + table + ".controls from '\"" + key + "\"\\s*:\\s*([0-9]+)')::bigint"
	}
	return "CASE WHEN json_valid(" + table + ".controls) THEN json_extract(" + table + ".controls, '$." + key + "') END"
}

// ClockAt is a time of the clock of reservations in a statement: a
// placeholder whose argument is the time, on PostgreSQL also NULL for
// the server's clock.
func (d Dialect) ClockAt() string {
	if d.PG {
		return PgAt
	}
	return "?"
}

// PgAt is a time on the clock of reservations on PostgreSQL: the
// argument, or for NULL the server's clock.
const PgAt = "coalesce(?::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint)"

// sqliteWords are SQLite's words for a statement: a LIMIT of a bound
// value as +?, an expression SQLite evaluates as the statement runs.
// Given a bare ?, SQLite plans for the value bound and prepares the
// statement again whenever another is bound (sqlite3ExprIsInteger): a
// reservation's limit, the free handlers, changes from one search to
// the next, and preparing the statement again cost it about a quarter
// of its time.
func sqliteWords(s string) string { return strings.ReplaceAll(s, "LIMIT ?", "LIMIT +?") }

// numbered rewrites a statement's ? placeholders as $1, $2, … for
// PostgreSQL. The statements hold no ? of their own.
func numbered(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// List is ids (or keys) as the one argument of LIST (or KEYS).
func List(ids []string) string {
	b, _ := json.Marshal(ids) // strings always marshal
	return string(b)
}

// Distinct are keys sorted, each once.
func Distinct(keys []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(keys)))
}

// Nullable is s, or NULL for "".
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// EachRow calls row for each of rows, the result of a query that failed
// with err or not, and closes them.
func EachRow(rows *sql.Rows, err error, row func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Querier is what runs a query: a database, a connection or a
// transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Texts runs, on q, a query of one text column and reads it.
func Texts(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	var out []string
	rows, err := q.QueryContext(ctx, query, args...)
	err = EachRow(rows, err, func(rows *sql.Rows) error {
		var s string
		err := rows.Scan(&s)
		out = append(out, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
