package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// User is the app's user, as its session middleware finds it.
type User struct {
	Name  string
	Admin bool
}

// currentUser stands for the app's own authentication: a session
// cookie, a header its proxy sets. Here, a header.
func currentUser(r *http.Request) (User, bool) {
	switch r.Header.Get("X-Example-User") {
	case "ada":
		return User{Name: "ada", Admin: true}, true
	case "bob":
		return User{Name: "bob"}, true
	}
	return User{}, false
}

// The access function of docs/dashboard.md: administrators act, other
// signed-in users look, everyone else is refused.
func access(r *http.Request) dashboard.Role {
	u, ok := currentUser(r)
	switch {
	case !ok:
		return dashboard.NoAccess
	case u.Admin:
		return dashboard.Operator
	}
	return dashboard.Viewer
}

// An app serves the dashboard with its module, [dashboard] enabled =
// true, and an access function.
func ExampleAccess() {
	a := app.New(
		config.Module(config.Defaults()),
		db.Module(),
		queue.Module(),
		dashboard.Module(),
		dashboard.Access(access),
	)
	_ = a // a.Main()
}

func ExampleNew() {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		panic(err)
	}
	d, err := dashboard.New(dashboard.Params{Inspector: q.Inspector(), AccessFunc: access})
	if err != nil {
		panic(err)
	}
	for _, who := range []string{"", "bob", "ada"} {
		for _, method := range []string{"GET", "POST"} {
			req := httptest.NewRequest(method, "/navree/queue/queues/default/pause", nil)
			if method == "GET" {
				req = httptest.NewRequest(method, "/navree/queue/", nil)
			}
			req.Header.Set("X-Example-User", who)
			w := httptest.NewRecorder()
			d.ServeHTTP(w, req)
			fmt.Printf("%-4s %-4s %d\n", who, method, w.Code)
		}
	}
	// Output:
	//      GET  403
	//      POST 403
	// bob  GET  200
	// bob  POST 403
	// ada  GET  200
	// ada  POST 303
}
