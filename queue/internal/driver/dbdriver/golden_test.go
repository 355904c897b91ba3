package dbdriver

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
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
			_, b := openBase(t, name)
			shapes := map[string]string{
				"take-over":         b.q.takeOver,
				"complete":          b.q.complete,
				"behind":            b.plans.Behind(false, false).SQL,
				"behind-only":       b.plans.Behind(false, true).SQL,
				"place-behind":      b.plans.Behind(true, false).SQL,
				"place-behind-only": b.plans.Behind(true, true).SQL,
			}
			all := everyShape(0) // the limit a parameter
			if b.dialect().PG {  // and a constant, the one of 16
				all = append(all, everyShape(16)...)
			}
			for _, shape := range all {
				shapes[shapeName(shape)] = b.plans.Reservation(shape).SQL
			}
			for shape, stmt := range shapes {
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

// shapeName is the name of shape's golden file.
func shapeName(shape plan.Shape) string {
	name := "reserve"
	for _, f := range []struct {
		on   bool
		name string
	}{{shape.Features&driver.FeaturePriority != 0, "prioritized"}, {shape.Features&driver.FeatureRate != 0, "rated"},
		{shape.Features&driver.FeatureFair != 0, "fair"}, {shape.Only, "only"}} {
		if f.on {
			name += "-" + f.name
		}
	}
	if shape.Size > 0 {
		name += "-" + strconv.Itoa(shape.Size)
	}
	return name
}

// laidOut is stmt a clause a line, for review: the space before each
// word that starts a clause, after the comma that ends a common table
// expression, and before the update that follows them, becomes a line
// break; no line ends in a space.
func laidOut(stmt string) string {
	for _, word := range []string{"SELECT ", "FROM ", "WHERE ", "AND ", "UNION ALL ", "ORDER BY ", "LIMIT ", "RETURNING ", "FOR UPDATE "} {
		stmt = strings.ReplaceAll(stmt, " "+word, "\n  "+word)
	}
	stmt = strings.ReplaceAll(stmt, ") UPDATE jobs ", ")\nUPDATE jobs ") // after its common table expressions
	lines := strings.Split(nextCTE.ReplaceAllString(stmt, "),\n$1"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ") // an editor would take it away
	}
	return strings.Join(lines, "\n") + "\n"
}

// nextCTE is the comma between two common table expressions.
var nextCTE = regexp.MustCompile(`\), (\w+ AS \()`)
