package plan

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

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
		// On PostgreSQL an argument the plan would see is a subquery of its
		// parameter (see Render).
		{sqlkit.Postgres, "SELECT 1 FROM jobs WHERE queue = (SELECT $1::text) AND available_at <= (SELECT $2::bigint) AND reopen_at > " +
			"coalesce($3::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint) AND queue <> (SELECT $1::text)"},
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
		text := Of(sqlkit.Postgres, Shape{Size: size}, nil).Text(sqlkit.Postgres, "id")
		if wantLimit := " LIMIT " + map[bool]string{true: strconv.Itoa(limit), false: "@limit"}[limit <= MaxSize]; !strings.Contains(text, wantLimit+" ") {
			t.Fatalf("the statement of %d has no%s: %s", limit, wantLimit, text)
		}
	}
}
