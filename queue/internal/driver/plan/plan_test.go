package plan

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// TestRenderNumbersEachNameOnce: a name used twice is one placeholder,
// numbered in the order the names first appear, and Bind gives each its
// value; PostgreSQL's @at reads the server's clock for NULL.
func TestRenderNumbersEachNameOnce(t *testing.T) {
	text := "SELECT 1 FROM jobs WHERE queue = @queue AND available_at <= @now AND reopen_at > @at AND queue <> @queue"
	for _, c := range []struct {
		d    sqlkit.Dialect
		want string
	}{
		{sqlkit.SQLite, "SELECT 1 FROM jobs WHERE queue = ?1 AND available_at <= ?2 AND reopen_at > ?3 AND queue <> ?1"},
		{sqlkit.Postgres, "SELECT 1 FROM jobs WHERE queue = $1 AND available_at <= $2 AND reopen_at > " +
			"coalesce($3::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint) AND queue <> $1"},
	} {
		st := Render(c.d, text)
		if st.SQL != c.want {
			t.Errorf("Render(PG %v) = %s\nwant %s", c.d.PG, st.SQL, c.want)
		}
		if got := st.Bind(&Values{Queue: "mail", Now: int64(7), At: int64(5)}); !reflect.DeepEqual(got, []any{"mail", int64(7), int64(5)}) {
			t.Errorf("Bind = %v; want [mail 7 5]", got)
		}
	}
}

// TestRenderRefusesAnUnknownName: a misspelt name fails loudly, naming
// itself, rather than become a placeholder without a value.
func TestRenderRefusesAnUnknownName(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "@qeue") {
			t.Errorf("recovered %v; want a panic naming @qeue", r)
		}
	}()
	Render(sqlkit.SQLite, "SELECT 1 FROM jobs WHERE queue = @qeue")
}

// TestAPartAddsOnlyWhenItsShapeAsksForIt: each feature's SQL is in a
// statement exactly when the shape asks for the feature, on both
// databases, so that a search that does not do a feature costs nothing
// for it.
func TestAPartAddsOnlyWhenItsShapeAsksForIt(t *testing.T) {
	marks := map[string]string{"fairness": "fair_seq", "priority": "priority", "rate limits": "queue_rates", "known types": "@names"}
	for _, d := range []sqlkit.Dialect{sqlkit.SQLite, sqlkit.Postgres} {
		for i := range 16 {
			shape := Shape{Features: driver.Features(i & 7), Only: i&8 != 0, Size: 4}
			p := Of(d, shape)
			text := p.Text(d, "id")
			for _, part := range Parts {
				mark := marks[part.Name]
				if mark == "" {
					t.Fatalf("no mark for the part %q", part.Name)
				}
				// The columns of a plan of several searches name priority and
				// fair_seq for the order of them together: look at the filters.
				var filters []string
				for _, s := range p.Searches {
					filters = append(filters, s.Where...)
				}
				if in := strings.Contains(strings.Join(filters, " "), mark); in != part.On(shape) {
					t.Errorf("PG %v %+v: %s in the filters = %v; want %v:\n%s", d.PG, shape, mark, in, part.On(shape), text)
				}
			}
			if rendered := Render(d, text).SQL; strings.Contains(rendered, "@") {
				t.Errorf("PG %v %+v: a name left unrendered: %s", d.PG, shape, rendered)
			}
		}
	}
}

// TestSizeFor: a limit up to MaxSize is its own constant, a larger one
// the parameter, and PostgreSQL writes each as its LIMIT.
func TestSizeFor(t *testing.T) {
	for limit := 1; limit <= 100; limit++ {
		size, want := SizeFor(limit), 0
		if limit <= MaxSize {
			want = limit
		}
		if size != want {
			t.Fatalf("SizeFor(%d) = %d; want %d", limit, size, want)
		}
		text := Of(sqlkit.Postgres, Shape{Size: size}).Text(sqlkit.Postgres, "id")
		if wantLimit := " LIMIT " + map[bool]string{true: strconv.Itoa(limit), false: "@limit"}[limit <= MaxSize]; !strings.Contains(text, wantLimit+" ") {
			t.Fatalf("the statement of %d has no%s: %s", limit, wantLimit, text)
		}
	}
}
