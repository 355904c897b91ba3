package db_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/urfave/cli/v2"
)

// TestARelativeSQLitePathIsInTheAppRoot: the default sqlite://var/app.db
// is the app folder's, whatever the working directory, and an error names
// the file it opened.
func TestARelativeSQLitePathIsInTheAppRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	t.Chdir(elsewhere)
	var name string
	a := app.New(config.Module(config.Sources{Root: root}), db.Module(),
		app.Commands(app.Command{Name: "where", Action: app.Uses(func(c *cli.Context, d *db.DB) error {
			name = d.String()
			return nil
		})}))
	a.Stdout, a.Stderr = io.Discard, io.Discard
	if err := a.Run(context.Background(), []string{"where"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "var", "app.db")
	if name != "sqlite://"+file {
		t.Fatalf("the database is %s, want sqlite://%s", name, file)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no database in the app folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "var")); err == nil {
		t.Fatal("a database was made in the working directory")
	}

	if err := os.WriteFile(file, []byte("not a database, but a file of text long enough to have a header"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(file + "-wal")
	os.Remove(file + "-shm")
	err := a.Run(context.Background(), []string{"where"})
	if want := "db: connect to sqlite://" + file + ": file is not a database (26)"; err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
}
