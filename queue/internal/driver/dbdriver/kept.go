package dbdriver

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// keptPlans keeps the plans of a driver's statements that return rows,
// on PostgreSQL behind a transaction-mode pooler (database.pooler).
// There no statement is prepared by name, since a statement prepared on
// one server connection is unknown to the next, and the server plans
// each one as it runs: the reservation and the completion cost several
// times their run in planning (docs/benchmarks.md). A PL/pgSQL
// function's statements keep their plans on the server connection that
// runs them, as a prepared statement does, whichever client calls it:
// each such statement becomes a function of its own, created on its
// first use (navree_kept_ and a hash of its text, so that a statement
// of another build is another function), and is run as SELECT * FROM
// the function. A statement whose function cannot be made (a role that
// may not create functions) runs as it is.
type keptPlans struct {
	sqldb *sql.DB
	calls sync.Map // query -> its call, or the query itself
}

// call is the statement that runs query through its function, made
// first if need be and may; query itself when none is, or can be, made.
// (A call in a transaction may not make it: that takes another
// connection of the pool, which may have no other.)
func (k *keptPlans) call(ctx context.Context, query string, may bool) string {
	if c, ok := k.calls.Load(query); ok {
		return c.(string)
	}
	if !may {
		return query
	}
	c, err := k.make(ctx, query)
	if err != nil {
		if ctx.Err() != nil {
			return query // cancelled: try again next time
		}
		c = query
	}
	k.calls.Store(query, c)
	return c
}

// stale reports whether err, from running query's call, says that its
// function is gone (dropped by hand) or no longer fits the tables (a
// migration changed a column's type); it then forgets the call, so the
// next call makes it again, and with drop drops the function, if any is
// left (not in a transaction: see call).
func (k *keptPlans) stale(ctx context.Context, query string, err error, drop bool) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || !slices.Contains([]string{"42883", "42804", "0A000"}, pgErr.Code) {
		return false
	}
	if c, ok := k.calls.LoadAndDelete(query); ok && c.(string) != query && drop {
		_, _ = k.sqldb.ExecContext(ctx, "DROP FUNCTION IF EXISTS "+keptName(query))
	}
	return true
}

// keptName is the name of query's function.
func keptName(query string) string {
	sum := sha256.Sum256([]byte(query))
	return "navree_kept_" + hex.EncodeToString(sum[:10])
}

// make creates the function of query, unless it exists, and returns its
// call.
func (k *keptPlans) make(ctx context.Context, query string) (string, error) {
	name := keptName(query)
	var params, fields []uint32
	conn, err := k.sqldb.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		sd, err := dc.(*stdlib.Conn).Conn().Prepare(ctx, "", query) // unnamed: described, not kept
		if err != nil {
			return err
		}
		params = sd.ParamOIDs
		for _, f := range sd.Fields {
			fields = append(fields, f.DataTypeOID)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(fields) == 0 {
		return "", fmt.Errorf("%s returns no rows", name)
	}
	args := make([]string, len(params))
	for i := range params {
		args[i] = fmt.Sprintf("$%d", i+1)
	}
	callSQL := "SELECT * FROM " + name + "(" + strings.Join(args, ", ") + ")"
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('navree_kept:' || current_schema() || ':' || $1, 0))", name); err != nil {
		return "", err
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, "SELECT to_regproc($1) IS NOT NULL", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return callSQL, nil
	}
	types := func(oids []uint32) ([]string, error) {
		var out []string
		rows, err := tx.QueryContext(ctx, "SELECT format_type(t, NULL) FROM unnest($1::oid[]) WITH ORDINALITY AS u(t, n) ORDER BY n", oids)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, rows.Err()
	}
	paramTypes, err := types(params)
	if err != nil {
		return "", err
	}
	fieldTypes, err := types(fields)
	if err != nil {
		return "", err
	}
	columns := make([]string, len(fieldTypes))
	for i, t := range fieldTypes {
		columns[i] = fmt.Sprintf("navree_%d %s", i+1, t)
	}
	body := "#variable_conflict use_column\nBEGIN\nRETURN QUERY " + query + ";\nEND"
	if strings.Contains(body, "$navree$") {
		return "", fmt.Errorf("%s: the statement holds the function's quote", name)
	}
	if _, err := tx.ExecContext(ctx, "CREATE FUNCTION "+name+"("+strings.Join(paramTypes, ", ")+") RETURNS TABLE ("+strings.Join(columns, ", ")+
		") LANGUAGE plpgsql AS $navree$\n"+body+"\n$navree$"); err != nil {
		return "", err
	}
	return callSQL, tx.Commit()
}
