package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"go.uber.org/fx"
	"modernc.org/sqlite" // registers the "sqlite" driver
)

// Config is the [database] section of the configuration.
type Config struct {
	// URL says which database to use: sqlite://PATH (relative to the app
	// root, see config.FindRoot, or sqlite:///abs/path) or postgres://…
	// (also postgresql://…). Default "sqlite://var/app.db".
	URL string `koanf:"url" validate:"required"`
	// SQLiteSynchronous is SQLite's synchronous level, "normal" (the
	// default: a commit survives a crash of the process, the last commits
	// may be lost on power loss) or "full" (a commit survives power loss,
	// several times slower).
	SQLiteSynchronous string `koanf:"sqlite_synchronous" validate:"oneof=normal full"`
	// BusyTimeoutMs is how long SQLite waits for another process's write
	// lock before it fails with "database is locked"; default 5000.
	BusyTimeoutMs int `koanf:"busy_timeout_ms" validate:"min=0"`
	// MaxOpenConns caps the connections of this process; default 10.
	MaxOpenConns int `koanf:"max_open_conns" validate:"min=1,max=10000"`
	// Pooler says what URL reaches on PostgreSQL: "none" (the default:
	// the server, or a pooler in session mode) or "transaction", a pooler
	// in transaction mode (PgBouncer's pool_mode = transaction,
	// Supavisor, RDS Proxy, Neon's pooled endpoint), which may give each
	// transaction another server connection. With it nothing Navree does
	// outlives its transaction on a server connection (no statement is
	// prepared by name), and workers listen for dispatches on ListenURL,
	// or poll.
	Pooler string `koanf:"pooler" validate:"oneof=none transaction"`
	// ListenURL is where each worker opens the one connection on which it
	// LISTENs for dispatches: a postgres:// address of URL's database that
	// reaches the server itself (or a pooler in session mode). Empty: URL,
	// unless Pooler is "transaction", when workers poll instead, every
	// queue.poll_interval_ms.
	ListenURL string `koanf:"listen_url"`
}

// DefaultConfig returns the defaults of the [database] section.
func DefaultConfig() Config {
	return Config{URL: "sqlite://var/app.db", SQLiteSynchronous: "normal", BusyTimeoutMs: 5000, MaxOpenConns: 10, Pooler: "none"}
}

// Validate checks that the URL names a database Navree can open: for
// PostgreSQL, one that pgx parses, its host and port included; and that
// a pooler and a listen URL are given for PostgreSQL only.
func (c Config) Validate() error {
	dialect, _, _, err := parseURL(c.URL)
	if err != nil {
		return err
	}
	if dialect != Postgres && c.Pooler == "transaction" {
		return config.Invalid("database.pooler", c.Pooler, "none: a pooler stands before PostgreSQL only, and database.url is not a postgres:// URL")
	}
	if c.ListenURL == "" {
		return nil
	}
	if dialect != Postgres {
		return config.Invalid("database.listen_url", c.ListenURL, "empty: workers listen for dispatches on PostgreSQL only, and database.url is not a postgres:// URL")
	}
	if d, _, _, err := parseURL(c.ListenURL); err != nil || d != Postgres {
		return config.Invalid("database.listen_url", c.ListenURL, "a postgres:// URL of the database of database.url, reaching the server itself")
	}
	return nil
}

// ErrNoSession is returned by Connect when the database is reached
// through a transaction-mode pooler and no database.listen_url gives a
// connection of its own.
var ErrNoSession = errors.New("database.pooler is transaction and database.listen_url is empty: no connection of its own to listen on")

// Dialect is the kind of database behind a [DB].
type Dialect string

// The dialects Navree runs on.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is the app's database: a *bun.DB, the [Dialect] it speaks and, on
// SQLite, a lock that lets one write transaction of this process run at a
// time (SQLite allows one writer; queueing in the process is fairer and
// faster than every connection retrying the file lock).
type DB struct {
	*bun.DB
	dialect     Dialect
	name        string          // the URL without its password
	writeLock   chan struct{}   // SQLite only
	busyTimeout time.Duration   // SQLite only
	folder      string          // SQLite: the file's folder, made when Ping connects
	pgConfig    *pgx.ConnConfig // PostgreSQL only
	listen      *pgx.ConnConfig // PostgreSQL: what Connect connects to; nil for none
	listenName  string          // its URL without its password
	pooled      bool            // PostgreSQL: through a transaction-mode pooler
}

// Pooled reports whether d reaches PostgreSQL through a pooler in
// transaction mode (database.pooler).
func (d *DB) Pooled() bool { return d.pooled }

// Dialect says which database d is.
func (d *DB) Dialect() Dialect { return d.dialect }

// String returns the database's URL without its password.
func (d *DB) String() string { return d.name }

const allowedURLs = "sqlite://PATH or postgres://USER@HOST:PORT/DATABASE"

// parseURL splits a database URL into its dialect and what the driver
// opens: a file path for SQLite, the URL itself and pgx's reading of it
// for PostgreSQL. A URL it refuses fails as an invalid database.url.
func parseURL(raw string) (Dialect, string, *pgx.ConnConfig, error) {
	problem := ""
	switch {
	case strings.HasPrefix(raw, "sqlite://"):
		path := strings.TrimPrefix(raw, "sqlite://")
		if path != "" && !strings.ContainsAny(path, "?#") {
			return SQLite, path, nil, nil
		}
		problem = " (the path must not be empty or hold ? or #)"
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if p := ambiguous(raw); p != "" {
			problem = " (" + p + ")"
			break
		}
		pc, err := pgx.ParseConfig(raw)
		if err == nil {
			return Postgres, raw, pc, nil
		}
		problem = " (" + unparsable(err) + ")"
	case !strings.Contains(raw, "://") && strings.Contains(raw, "="):
		problem = " (a key=value connection string is not accepted: write it as a postgres:// URL)"
	}
	return "", "", nil, config.Invalid("database.url", raw, allowedURLs+problem)
}

// ambiguous says what in a postgres:// URL could make pgx read a part of
// its password as something else (the host, the port, the database, a
// parameter), which errors and logs print; "" if nothing does.
func ambiguous(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	at := strings.IndexByte(rest, '@')
	if strings.Count(rest, "@") > 1 || at >= 0 && strings.Contains(rest[:at], "/") {
		return "percent-encode each @ and / of the user name and password, as %40 and %2F"
	}
	if _, err := url.PathUnescape(rest); err != nil {
		return "a % must start a percent-encoded byte, such as %25 for % itself"
	}
	if _, query, ok := strings.Cut(rest[at+1:], "?"); ok {
		for pair := range strings.SplitSeq(query, "&") {
			if strings.Count(pair, "=") != 1 {
				return "each query parameter must be KEY=VALUE: percent-encode & and = in a value, as %26 and %3D"
			}
		}
	}
	return ""
}

// unparsable says why pgx cannot parse a URL, without the URL, which pgx
// quotes with only what it recognizes as a password masked: the port or
// an IPv6 host in Navree's words, anything else in pgx's.
func unparsable(err error) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if i := strings.LastIndex(msg, "`: "); errors.As(err, &pe) && i >= 0 {
		msg = msg[i+len("`: "):] // after "cannot parse `URL`: "
	}
	switch {
	case msg == "invalid port":
		return "the port must be a number from 1 to 65535"
	case strings.Contains(msg, "IPv6 host address"), strings.Contains(msg, `(expected ":" or "/")`):
		return "an IPv6 host must be written in brackets, as in postgres://USER@[::1]:5432/DATABASE"
	}
	return config.Redact(msg)
}

// Open opens the database cfg names; a relative SQLite path is relative
// to the working directory ([Module] makes it relative to the app folder).
// It does no I/O: [DB.Ping] connects, as the module does when the app
// starts, and creates an SQLite database's folder first.
func Open(cfg Config) (*DB, error) {
	dialect, target, pc, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	d := &DB{dialect: dialect, name: config.Redact(cfg.URL)}
	switch dialect {
	case SQLite:
		// Errors and logs name the file itself, wherever the process runs.
		if target, err = filepath.Abs(target); err != nil {
			return nil, fmt.Errorf("db: open %s: %w", d.name, err)
		}
		d.name = "sqlite://" + target
		d.folder = filepath.Dir(target)
		sqldb, err := sql.Open("sqlite", sqliteDSN(target, cfg))
		if err != nil {
			return nil, fmt.Errorf("db: open %s: %w", d.name, err)
		}
		d.DB = bun.NewDB(sqldb, sqlitedialect.New())
		d.writeLock = make(chan struct{}, 1)
		d.busyTimeout = time.Duration(cfg.BusyTimeoutMs) * time.Millisecond
	case Postgres:
		d.pgConfig, d.listen, d.listenName = pc, pc, d.name
		if cfg.Pooler == "transaction" {
			// pgx's default prepares each statement by name on the connection
			// and keeps it, which the pooler's next server connection does
			// not know: describe it instead, keep the description, and send
			// it whole each time (one round trip, no name).
			copied := *pc
			copied.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
			d.pgConfig, d.listen, d.pooled = &copied, nil, true
		}
		if cfg.ListenURL != "" {
			_, _, lc, err := parseURL(cfg.ListenURL)
			if err != nil || lc == nil {
				return nil, config.Invalid("database.listen_url", cfg.ListenURL, "a postgres:// URL of the database of database.url, reaching the server itself")
			}
			d.listen, d.listenName = lc, config.Redact(cfg.ListenURL)
		}
		d.DB = bun.NewDB(stdlib.OpenDB(*d.pgConfig), pgdialect.New())
	}
	d.SetMaxOpenConns(cfg.MaxOpenConns)
	d.SetMaxIdleConns(cfg.MaxOpenConns)
	return d, nil
}

// sqliteDSN sets every pragma a queue needs on each new connection: WAL so
// readers never block the writer, the synchronous level, a busy timeout,
// foreign keys on, and BEGIN IMMEDIATE for every transaction so a
// read-then-write transaction takes the write lock first instead of
// failing with SQLITE_BUSY halfway.
func sqliteDSN(path string, cfg Config) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeoutMs))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+strings.ToUpper(cfg.SQLiteSynchronous)+")")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// ErrNotPostgres is returned by what only PostgreSQL offers, such as
// [DB.Connect], on another database.
var ErrNotPostgres = errors.New("not a PostgreSQL database")

// Connect opens a PostgreSQL connection of its own, outside the pool and
// its max_open_conns, for work that holds a session for long, such as
// LISTEN: holding a pool connection would leave one fewer for queries,
// and giving it back broken would make the pool open another while
// queries wait. It connects to database.listen_url when one is set; with
// a transaction-mode pooler and none, it fails with ErrNoSession. The
// caller closes it.
func (d *DB) Connect(ctx context.Context) (*pgx.Conn, error) {
	switch {
	case d.pgConfig == nil:
		return nil, fmt.Errorf("db: connect to %s: %w", d.name, ErrNotPostgres)
	case d.listen == nil:
		return nil, fmt.Errorf("db: connect to %s: %w", d.name, ErrNoSession)
	}
	conn, err := pgx.ConnectConfig(ctx, d.listen)
	if err != nil {
		return nil, connectError(d.listenName, d.listen, err)
	}
	return conn, nil
}

// connectError is err, a failure to connect to d, naming d without its
// password. Two that a person fixes outside the app say how, in one
// line: a refused connection (pgx tries each address of the host, and
// without TLS after with it, each attempt a line of its error) and, on
// PostgreSQL, a database that does not exist (SQLSTATE 3D000).
func (d *DB) connectError(err error) error { return connectError(d.name, d.pgConfig, err) }

// connectError is err, a failure to connect to the database name (its
// URL without a password), read by pgx as pc (nil for SQLite), as
// DB.connectError says it.
func connectError(name string, pc *pgx.ConnConfig, err error) error {
	if pc != nil {
		addr := net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port)))
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "3D000":
			name := pc.Database
			create := "createdb -h " + shellWord(pc.Host) + " -p " + strconv.Itoa(int(pc.Port))
			if pc.User != "" {
				create += " -U " + shellWord(pc.User)
			}
			return &explained{fmt.Sprintf("database %q does not exist on %s: create it with: %s %s (or, in psql: CREATE DATABASE %s;)",
				name, addr, create, shellWord(name), sqlName(name)), err}
		case pgErr == nil && errors.Is(err, syscall.ECONNREFUSED):
			return &explained{fmt.Sprintf("cannot connect to PostgreSQL at %s: connection refused (is the server running?)", addr), err}
		}
	}
	return fmt.Errorf("db: connect to %s: %w", name, err)
}

// explained is an error told in other words than the error it wraps.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

var (
	shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:-]+$`) // a word no shell reads otherwise
	sqlPlain  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)  // an SQL name that needs no quotes
)

// shellWord is s as one word of a shell's command line.
func shellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sqlName is name as an SQL identifier: quoted unless PostgreSQL would
// read it unquoted as itself.
func sqlName(name string) string {
	if sqlPlain.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Ping connects to the database, failing with an error that names it
// (without its password); a refused connection or a PostgreSQL database
// that does not exist, with its address and what to do, in one line.
//
// On SQLite the first connection to a new file turns it to WAL mode, which
// needs the file to itself: when another process opens it at that moment,
// SQLite answers SQLITE_BUSY at once, without waiting for busy_timeout_ms,
// so Ping tries again, a few milliseconds apart, for up to that long.
func (d *DB) Ping(ctx context.Context) error {
	deadline := time.Now().Add(d.busyTimeout)
	for {
		err := d.ping(ctx)
		if err == nil || !isBusy(err) || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(1+rand.IntN(5)) * time.Millisecond):
		}
	}
}

func (d *DB) ping(ctx context.Context) error {
	if d.folder != "" {
		if err := os.MkdirAll(d.folder, 0o755); err != nil {
			return fmt.Errorf("db: create the folder of %s: %w", d.name, err)
		}
	}
	if err := d.PingContext(ctx); err != nil {
		return d.connectError(err)
	}
	if d.dialect == SQLite {
		// Connecting runs the pragmas; a file that is not a database fails here.
		var mode string
		if err := d.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fmt.Errorf("db: open %s: %w", d.name, err)
		}
	}
	return nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// Write runs fn, one write outside a transaction (a single statement
// commits on its own), holding the process's SQLite write lock, as
// transactions do; on PostgreSQL it just runs fn. The writers of one
// process then take turns in order instead of meeting SQLite's busy
// handler, which sleeps for milliseconds between tries.
//
// On SQLite, ctx must not carry a unit of work whose transaction has
// begun: the write would wait for that transaction, which waits for the
// write. Write returns [ErrWriteInTransaction] instead.
func (d *DB) Write(ctx context.Context, fn func() error) error {
	if u := UnitOfWorkFrom(ctx); d.writeLock != nil && u != nil && u.holdsLock() {
		return ErrWriteInTransaction
	}
	if err := d.lock(ctx); err != nil {
		return err
	}
	defer d.unlock()
	return fn()
}

// lock takes the process's SQLite write lock; a no-op on PostgreSQL.
func (d *DB) lock(ctx context.Context) error {
	if d.writeLock == nil {
		return nil
	}
	select {
	case d.writeLock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *DB) unlock() {
	if d.writeLock != nil {
		<-d.writeLock
	}
}

type moduleIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	Sources   *config.Config
	Logger    *slog.Logger
}

// inRoot returns cfg with a relative SQLite path made relative to root,
// the app folder ("" leaves it relative to the working directory).
func (c Config) inRoot(root string) Config {
	if path, ok := strings.CutPrefix(c.URL, "sqlite://"); ok && root != "" && path != "" && !filepath.IsAbs(path) {
		c.URL = "sqlite://" + filepath.Join(root, path)
	}
	return c
}

// Module provides the app's [*DB] from the [database] section, connects
// it when the app starts and closes it when the app stops. A relative
// SQLite path is relative to the app folder (config.Config.Root). It also adds
// the migrate commands, the [*Migrator] and, to serve, the middleware that
// runs each request in a unit of work ([Middleware]).
func Module() fx.Option {
	return fx.Module("db",
		config.Section("database", DefaultConfig()),
		fx.Provide(func(p moduleIn) (*DB, error) {
			d, err := Open(p.Config.inRoot(p.Sources.Root()))
			if err != nil {
				return nil, err
			}
			p.Lifecycle.Append(fx.StartStopHook(d.Ping, d.Close))
			return d, nil
		}),
		fx.Provide(fx.Annotate(NewMigrator, fx.ParamTags(``, `group:"db.migrations"`))),
		fx.Provide(newMigrated),
		// Only serve builds the middleware: when it starts, it warns of
		// the migrations that have not run.
		fx.Provide(app.AsMiddleware(func(d *DB, m *Migrator, run app.Invocation, lc fx.Lifecycle, logger *slog.Logger) app.Middleware {
			lc.Append(fx.StartHook(func(ctx context.Context) error { return warnPending(ctx, m, run, logger) }))
			return app.Middleware{Order: 100, Wrap: Middleware(d, logger)}
		})),
		app.Commands(migrateCommands()...),
	)
}
