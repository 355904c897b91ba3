// Package migrations holds the framework's own migration sets as embedded
// SQL, one folder a set (migrations/queue/…), with a file per dialect where
// SQLite and PostgreSQL differ. Modules add them with db.Migrations.
package migrations
