package dbdriver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// cluster is a PostgreSQL server of a test's own, in a temporary folder
// on a free port, that the test may crash and restart without touching
// the server other tests share. It is stopped and deleted when the test
// ends, failed or not.
type cluster struct {
	t    *testing.T
	bin  string // the folder of initdb and pg_ctl
	dir  string
	cred *syscall.Credential // the postgres user's, when the test runs as root
	URL  string
}

// postgresBin returns the folder of the newest PostgreSQL's initdb and
// pg_ctl: Debian's /usr/lib/postgresql/VERSION/bin, else the PATH's.
func postgresBin() (string, bool) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	slices.SortFunc(found, func(a, b string) int { return version(b) - version(a) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), true
	}
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(path), true
		}
	}
	return "", false
}

// version is the major version in a path /usr/lib/postgresql/VERSION/bin/….
func version(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// newCluster creates and starts a cluster, with settings of the server
// ("-c name=value") if any, or skips the test where PostgreSQL's binaries
// are not installed, and in a -short run: a cluster of its own takes
// seconds of CPU to create, and the full suite has it.
func newCluster(t *testing.T, settings ...string) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server of its own: not in a -short run")
	}
	bin, ok := postgresBin()
	if !ok {
		t.Skip("PostgreSQL's initdb and pg_ctl are not installed (looked in /usr/lib/postgresql/*/bin and on the PATH)")
	}
	dir, err := os.MkdirTemp("", "navree-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, bin: bin, dir: dir}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 { // initdb refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the cluster needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	// fsync stays on: a crash while a commit waits for the disk is what
	// leaves a committed transaction without its answer.
	t.Cleanup(c.stop)
	// The port is one the kernel had free a moment ago; another process
	// of a loaded machine may take it before the server binds it, so the
	// start is tried again on another then.
	var port int
	for try := 1; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		args := []string{"start", "-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 %s", port, dir, strings.Join(settings, " "))}
		if try == 3 || c.tryPgCtl(args...) {
			if try == 3 {
				c.pgCtl(args...)
			}
			break
		}
	}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c
}

// restart crashes the server (pg_ctl restart -m immediate: every process
// killed at once, as a crash does) and starts it again, recovering from
// its write-ahead log. It returns once the server accepts connections.
func (c *cluster) restart() { c.pgCtl("restart", "-m", "immediate") }

// stop stops the server, if it runs.
func (c *cluster) stop() {
	cmd := exec.Command(filepath.Join(c.bin, "pg_ctl"), "-D", filepath.Join(c.dir, "data"), "-w", "-m", "immediate", "stop")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Run() // fails if it was never started
}

// tryPgCtl runs pg_ctl with args and reports whether it succeeded; one
// that failed for a port another process took fails nothing, any other
// failure fails the test.
func (c *cluster) tryPgCtl(args ...string) bool {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, "pg_ctl"), append([]string{"-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-w"}, args...)...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return true
	}
	log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
	if strings.Contains(string(log), "already in use") {
		return false
	}
	c.t.Fatalf("pg_ctl %v: %v\n%s\n%s", args, err, out, log)
	return false
}

func (c *cluster) pgCtl(args ...string) {
	c.run("pg_ctl", append([]string{"-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-w"}, args...)...)
}

func (c *cluster) run(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		c.t.Fatalf("%s %v: %v\n%s\n%s", name, args, err, out, log)
	}
}
