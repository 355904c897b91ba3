package main

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"go.uber.org/fx"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// visitsModule counts the visits of the page /visits: a migration set,
// and a route that writes through the request's unit of work. The app
// leaves / to the welcome page, which serve shows in development.
var visitsModule = fx.Module("visits",
	db.Migrations("example", mustSub(migrationFiles, "migrations")),
	fx.Provide(app.AsRoute(newVisitsRoute)),
	app.Routes(app.Route{Pattern: "GET /healthz", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})}),
)

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder
	}
	return sub
}

// newVisitsRoute records each visit and shows how many there have been.
// The request's unit of work (db.Middleware) commits the insert with the
// response.
func newVisitsRoute(d *db.DB, clock app.Clock) app.Route {
	return app.Route{Pattern: "GET /visits", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		q, err := d.Querier(ctx)
		if err == nil {
			_, err = q.NewRaw("INSERT INTO visits (visited_at) VALUES (?)", clock.Now().UnixMilli()).Exec(ctx)
		}
		var n int
		if err == nil {
			err = q.NewRaw("SELECT count(*) FROM visits").Scan(ctx, &n)
		}
		if err != nil {
			http.Error(w, "the visits table is missing: run `app migrate` first", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "Hello from Navree. This page has had %d visit(s).\n", n)
	})}
}
