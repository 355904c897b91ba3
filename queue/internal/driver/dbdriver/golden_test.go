package dbdriver

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

var update = flag.Bool("update", false, "rewrite testdata/reservations/ from the statements the driver renders")

// TestReservationsAsRendered: every shape of a reservation's statement,
// as each database renders it, is in testdata/reservations/, one file a
// shape, laid out a clause a line: a change to a search shows in review
// as a change to these files (go test -run TestReservationsAsRendered
// -update writes them). The plans are the EXPLAIN tests'.
func TestReservationsAsRendered(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, _ := openDriver(t, name)
			var b *base
			switch d := drv.(type) {
			case *sqliteDriver:
				b = d.base
			case *postgresDriver:
				b = d.base
			}
			only := driver.NewNames([]string{"crm.export", "mail.send"})
			shapes := map[string]string{
				"reserve":                   b.q.reserve,
				"reserve-prioritized":       b.q.reservePrioritized,
				"reserve-rated":             b.q.reserveRated,
				"reserve-prioritized-rated": b.q.reservePrioritizedRated,
				"reserve-only":              b.only(b.q.reserve, only),
				"take-over":                 b.q.takeOver,
				"complete":                  b.q.complete,
			}
			if b.q.reserveSized != nil { // PostgreSQL's, one a size: the one of 16
				shapes["reserve-16"] = b.q.reserveSized[16]
				shapes["reserve-only"] = b.only(b.q.reserveSized[16], only)
				shapes["reserve-prioritized-16"] = b.q.prioritizedSized[16]
				shapes["reserve-rated-16"] = b.q.ratedSized[16]
				shapes["reserve-prioritized-rated-16"] = b.q.prioRatedSized[16]
			}
			for _, prio := range []bool{false, true} {
				for _, rated := range []bool{false, true} {
					name := "fair"
					if prio {
						name += "-prioritized"
					}
					if rated {
						name += "-rated"
					}
					size := 0 // SQLite's limit is a parameter; PostgreSQL's, the one of 16
					if b.q.reserveSized != nil {
						size = 16
					}
					shapes[name] = b.fairQuery(fairShape{prio, rated, size}).query
				}
			}
			for shape, stmt := range shapes {
				if stmt == "" { // not this database's
					continue
				}
				path := filepath.Join("testdata", "reservations", name+"-"+shape+".sql")
				got := laidOut(stmt)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v: write it with go test -run TestReservationsAsRendered -update, and review it", err)
				}
				if got != string(want) {
					t.Errorf("%s renders otherwise than %s (review the change, then go test -run TestReservationsAsRendered -update):\n%s", shape, path, got)
				}
			}
		})
	}
}

// laidOut is stmt a clause a line, for review: the space before each
// word that starts a clause, and after the comma that ends a common
// table expression, becomes a line break; no line ends in a space.
func laidOut(stmt string) string {
	for _, word := range []string{"SELECT ", "FROM ", "WHERE ", "AND ", "UNION ALL ", "ORDER BY ", "LIMIT ", "RETURNING ", "FOR UPDATE "} {
		stmt = strings.ReplaceAll(stmt, " "+word, "\n  "+word)
	}
	lines := strings.Split(nextCTE.ReplaceAllString(stmt, "),\n$1"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ") // an editor would take it away
	}
	return strings.Join(lines, "\n") + "\n"
}

// nextCTE is the comma between two common table expressions.
var nextCTE = regexp.MustCompile(`\), (\w+ AS \()`)
