package dashboard

import (
	"context"
	"net"
	"net/http"
)

// Role is what a request may do on the dashboard.
type Role int

// The roles, each allowed what the one before it is.
const (
	// NoAccess is refused every page: 403 Forbidden.
	NoAccess Role = iota
	// Viewer reads every page, payloads included (with the configured
	// keys masked).
	Viewer
	// Operator reads, and acts: retries, cancels and deletes jobs,
	// cancels and retries flows, pauses and resumes queues.
	Operator
)

// String names the role.
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	}
	return "no access"
}

// AccessFunc decides the role of a request, from what the app knows of
// its user: a session, a header its proxy sets. It is called for every
// request, assets included; return [NoAccess] to refuse one.
type AccessFunc func(r *http.Request) Role

// roleKey is the context key of the request's role.
type roleKey struct{}

// roleOf is the role the dashboard gave the request.
func roleOf(ctx context.Context) Role {
	r, _ := ctx.Value(roleKey{}).(Role)
	return r
}

// role decides r's role: the AccessFunc's, or, without one, Operator for
// a loopback request in development and NoAccess otherwise.
func (d *Dashboard) role(r *http.Request) Role {
	if d.access != nil {
		return d.access(r)
	}
	if d.development && loopback(r) {
		return Operator
	}
	return NoAccess
}

// loopback reports whether r came from a loopback address, straight: a
// request that a proxy forwarded (it says so in a header) is not, though
// the proxy connects from 127.0.0.1.
func loopback(r *http.Request) bool {
	if r.Header.Get("Forwarded") != "" || r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("X-Real-Ip") != "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
