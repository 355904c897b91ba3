package sqlkit

import (
	"context"
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

// TestDialects: each dialect's words for the same statement, and a
// rendering kept once however often it is asked for.
func TestDialects(t *testing.T) {
	const stmt = "SELECT 1 FROM jobs WHERE id = ? AND queue = ? AND id IN LIST AND at <= AT ORDER BY id LIMIT ?"
	for _, c := range []struct {
		d              Dialect
		q, clocked     string
		keys, keysWant string
	}{
		{SQLite,
			"SELECT 1 FROM jobs WHERE id = ? AND queue = ? AND id IN (SELECT value FROM json_each(?)) AND at <= AT ORDER BY id LIMIT +?",
			"SELECT 1 FROM jobs WHERE id = ? AND queue = ? AND id IN LIST AND at <= ? ORDER BY id LIMIT +?",
			"SELECT key FROM r WHERE key IN KEYS", "SELECT key FROM r WHERE key IN (SELECT value FROM json_each(?))"},
		{Postgres,
			"SELECT 1 FROM jobs WHERE id = $1::uuid AND queue = $2 AND id IN (SELECT x::uuid FROM jsonb_array_elements_text($3::jsonb) AS x) AND at <= AT ORDER BY id LIMIT $4",
			"SELECT 1 FROM jobs WHERE id = $1 AND queue = $2 AND id IN LIST AND at <= coalesce($3::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint) ORDER BY id LIMIT $4",
			"SELECT key FROM r WHERE key IN KEYS", "SELECT key FROM r WHERE key IN (SELECT jsonb_array_elements_text($1::jsonb))"},
	} {
		d := c.d.Kept()
		if got := d.Q(stmt); got != c.q {
			t.Errorf("PG %v: Q = %s\nwant %s", d.PG, got, c.q)
		}
		if got := d.Clocked(stmt); got != c.clocked {
			t.Errorf("PG %v: Clocked = %s\nwant %s", d.PG, got, c.clocked)
		}
		if got := d.Keys(c.keys); got != c.keysWant {
			t.Errorf("PG %v: Keys = %s\nwant %s", d.PG, got, c.keysWant)
		}
		for range 3 {
			d.Q(stmt)
			d.Words(stmt)
		}
		if n := d.Rendered(); n != 4 { // Q, Clocked, Keys, Words of stmt
			t.Errorf("PG %v: kept %d renderings; want 4, each once", d.PG, n)
		}
		if n := c.d.Rendered(); n != 0 {
			t.Errorf("PG %v: the shared dialect kept %d; want none", d.PG, n)
		}
	}
}

// TestListAndTexts: a list passed as one argument reaches SQLite whole,
// a quote and a comma included, and Texts reads it back.
func TestListAndTexts(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := []string{"a", "it's", "b,c"}
	got, err := Texts(context.Background(), db, SQLite.Q("SELECT value FROM json_each(?) WHERE value IN LIST ORDER BY value"), List(want), List(want))
	if err != nil || len(got) != 3 || got[0] != "a" || got[1] != "b,c" || got[2] != "it's" {
		t.Fatalf("Texts = %q, %v; want a, b,c, it's", got, err)
	}
	if d := Distinct([]string{"b", "a", "b"}); len(d) != 2 || d[0] != "a" || d[1] != "b" {
		t.Fatalf("Distinct = %q", d)
	}
	if Nullable("") != nil || Nullable("x") != "x" {
		t.Fatal("Nullable")
	}
}
