package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Arg is a named argument of a statement: @ and its name in the text.
type Arg uint8

// The arguments, by name.
const (
	Queue Arg = iota // @queue: the queue
	Does             // @does: the features the search does (driver.Features)
	From             // @from: the due time a search starts from
	Now              // @now: the due time it ends at
	Place            // @place: the first place of the jobs with a fairness key
	At               // @at: the reservation's time; on PostgreSQL NULL for the server's clock
	By               // @by: the worker that reserves, NULL for none
	Limit            // @limit: how many at most (SQLite's; PostgreSQL's is Shape.Size)
	Names            // @names: the job types of Only, a JSON array on SQLite, a []string on PostgreSQL
	nargs
)

var argNames = [nargs]string{"queue", "does", "from", "now", "place", "at", "by", "limit", "names"}

// pgTypes are the arguments' types on PostgreSQL.
var pgTypes = [nargs]string{"text", "integer", "bigint", "bigint", "bigint", "bigint", "text", "bigint", "text[]"}

// String is the name of a.
func (a Arg) String() string { return argNames[a] }

// Values are the arguments of a statement, by name:
// Values{Queue: "mail", Now: now}.
type Values [nargs]any

// Statement is a statement in a database's words, its arguments
// numbered.
type Statement struct {
	SQL string
	// Args are the arguments of its placeholders, in the order of their
	// numbers: the first is $1 (or ?1).
	Args []Arg
}

// Bind returns the arguments of s, in order, from v.
func (s Statement) Bind(v *Values) []any {
	out := make([]any, len(s.Args))
	for i, a := range s.Args {
		out[i] = v[a]
	}
	return out
}

// Render numbers the named arguments of text in d's words (SQLite ?1,
// PostgreSQL $1), each name once, in the order they first appear. A name
// that is not an Arg is a fault of the text it was given: Render panics,
// naming it, as a regular expression that does not compile would.
//
// On PostgreSQL each argument of a search (all but @at and @by, which
// only the reservation's SET reads) is a subquery of its parameter,
// which the planner reads as a value unknown whether it plans for the
// values given or for any: the two plans are one, and PostgreSQL keeps
// it after its five tries. A prepared statement keeps one plan only
// when that plan looks no dearer than those made for the values given;
// with the queue, the bounds and the limit seen, a plan for them
// estimated fewer jobs to walk than one for any (a queue of no
// statistics, a LIMIT of a tenth of the rows), and a large reservation,
// its LIMIT a parameter, was planned anew at every execution: 175 µs a
// plan with the indexes of today's jobs, a tenth of its server time in
// queue:bench. The plan is the same either way, the shape's index from
// its bound on; the EXPLAIN tests hold it.
func Render(d sqlkit.Dialect, text string) Statement {
	var b strings.Builder
	var st Statement
	number := [nargs]int{}
	for rest := text; rest != ""; {
		i := strings.IndexByte(rest, '@')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i+1:]
		n := 0
		for n < len(rest) && (rest[n] >= 'a' && rest[n] <= 'z') {
			n++
		}
		a := argOf(rest[:n])
		if a == nargs {
			panic(fmt.Sprintf("plan: @%s in %q is no argument", rest[:n], text))
		}
		rest = rest[n:]
		if number[a] == 0 {
			st.Args = append(st.Args, a)
			number[a] = len(st.Args)
		}
		p := "?" + strconv.Itoa(number[a])
		if d.PG {
			p = "$" + strconv.Itoa(number[a])
			switch a {
			case At:
				p = strings.Replace(sqlkit.PgAt, "?", p, 1) // the server's clock for NULL
			case By:
			default: // a value the plan does not see: see Render
				p = "(SELECT " + p + "::" + pgTypes[a] + ")"
			}
		}
		b.WriteString(p)
	}
	st.SQL = b.String()
	return st
}

// argOf is the Arg named name, or nargs for none.
func argOf(name string) Arg {
	for a, n := range argNames {
		if n == name {
			return Arg(a)
		}
	}
	return nargs
}
