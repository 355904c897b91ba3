// Package db is the app's database: a [*DB] over bun on SQLite (the
// embedded default) or PostgreSQL, named migration sets, and the unit of
// work.
//
// # Databases
//
// The [database] url chooses the database. sqlite://var/app.db, the
// default, is a file relative to the app folder, see config.FindRoot (its
// folder is created); every connection runs in WAL mode with a busy timeout, foreign
// keys on and BEGIN IMMEDIATE transactions, and this process runs one
// write transaction at a time. postgres://user@host:5432/app uses
// PostgreSQL through pgx; [DB.Connect] opens a connection outside the
// pool for work that holds one for long, such as LISTEN.
//
// # Migrations
//
// Modules add named sets of SQL files with [Migrations]; the migrate,
// migrate:status and migrate:rollback commands apply, list and undo them
// ([Migrator]).
//
// # Unit of work
//
// [DB.Transaction] runs a function in a [UnitOfWork] carried by its
// context. The transaction begins when code first asks for it
// ([UnitOfWork.Tx], [DB.Querier]), and [UnitOfWork.AfterCommit] hooks run
// only once it has committed. [Middleware] gives each HTTP request a unit
// of work that commits when the response status is below 400.
//
// # Lost commits
//
// On PostgreSQL a connection can break after a COMMIT was sent and before
// its answer came back ([ConnectionLost]). A unit of work that knows its
// transaction ([UnitOfWork.Track], as the queue's dispatch records it)
// then asks the server whether it committed; one that does not fails
// with an error wrapping [ErrOutcomeUnknown].
package db
