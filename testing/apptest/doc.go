// Package apptest builds a Navree app for one test: a temporary database,
// replaced services, a fixed clock, and commands and HTTP routes to call.
//
// Not built yet; db/dbtest already gives tests fresh SQLite and PostgreSQL
// databases.
package apptest
