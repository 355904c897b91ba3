package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"go.uber.org/fx"
)

// Who a request is. The inbox (GET /notifications) shows the
// notifications of the signed-in user, and who that is comes from the
// request's identity, a session or a token, never from its path or its
// parameters, which anyone can change. The example app has no accounts;
// it has the shape a real sign-in takes:
//
//   - the signIn middleware resolves each request's user (an app's own
//     reads its session) and puts it on the request's context;
//   - a handler asks signedIn, and answers 403 Forbidden when no one is.
//
// The example's sign-in is a stand-in for development (no APP_ENV, or
// APP_ENV=development): GET /dev/sign-in?user=ada sets a cookie that signs
// the browser in as ada. Anyone can set that cookie, so no other
// environment serves the route or reads the cookie: in production the
// example signs no one in, and its inbox shows no one's notifications.

// devUserCookie is the cookie of the development sign-in.
const devUserCookie = "dev_user"

// userKey is the context key of the signed-in user.
type userKey struct{}

// signedIn returns the user the request of ctx is signed in as, and false
// when it is signed in as no one.
func signedIn(ctx context.Context) (user, bool) {
	u, ok := ctx.Value(userKey{}).(user)
	return u, ok
}

// development reports whether the app runs in development: no APP_ENV, or
// APP_ENV=development.
func development(c *config.Config) bool { return c.Env() == "" || c.Env() == "development" }

// newSignIn is the middleware that signs each request in as the user
// userOf finds: in development the user of its dev_user cookie, elsewhere
// no one. An app with accounts has a userOf that reads its session.
func newSignIn(c *config.Config) app.Middleware {
	userOf := noSignIn
	if development(c) {
		userOf = devUser
	}
	return app.Middleware{Order: 50, Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, ok := userOf(r); ok {
				r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
			}
			next.ServeHTTP(w, r)
		})
	}}
}

// noSignIn signs every request in as no one.
func noSignIn(*http.Request) (user, bool) { return user{}, false }

// devUser is the user of r's dev_user cookie, which GET /dev/sign-in sets.
func devUser(r *http.Request) (user, bool) {
	cookie, err := r.Cookie(devUserCookie)
	if err != nil || !validUserID(cookie.Value) {
		return user{}, false
	}
	return user{ID: cookie.Value}, true
}

// devSignInRoutes is GET /dev/sign-in?user=NAME in development, which
// signs the browser in as NAME and sends it to its inbox, and without
// ?user (the welcome page's link) a form that asks for NAME; nothing
// elsewhere.
func devSignInRoutes(c *config.Config) []app.Route {
	if !development(c) {
		return nil
	}
	return []app.Route{{Pattern: "GET /dev/sign-in", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.Query().Has("user") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, signInPage)
			return
		}
		id := r.URL.Query().Get("user")
		if !validUserID(id) {
			http.Error(w, fmt.Sprintf("Invalid user %q: want 1 to 64 ASCII letters, digits, '-', '_' or '.', such as /dev/sign-in?user=ada.", id), http.StatusBadRequest)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: devUserCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/notifications", http.StatusSeeOther)
	})}}
}

// signInPage is the form of the development sign-in.
const signInPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in (development)</title></head>
<body><h1>Sign in (development)</h1>
<form method="get" action="/dev/sign-in">
<label>User <input name="user" value="ada" required maxlength="64" pattern="[A-Za-z0-9._\-]+"></label>
<button>Sign in</button>
</form>
<p>Any name signs in, with no password: this page is served in development only. The inbox, /notifications, then shows that user's notifications (the demo's export notifies ada).</p>
</body></html>
`

// validUserID reports whether id is a user id of the example: 1 to 64
// ASCII letters, digits, '-', '_' or '.'.
func validUserID(id string) bool {
	if len(id) < 1 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

var signInModule = fx.Module("signin",
	fx.Provide(app.AsMiddleware(newSignIn)),
	fx.Provide(fx.Annotate(devSignInRoutes, fx.ResultTags(`group:"app.routes,flatten"`))),
)
