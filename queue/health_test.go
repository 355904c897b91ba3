package queue_test

import (
	"io"
	"net/http"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
)

// TestHealthChecks: queue:work --health-addr answers /livez, and /readyz
// once its worker is registered; a SIGTERM stops the process and the
// checks with it.
func TestHealthChecks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
		cmd, _, _, stderr := worker(t, url, "queue:work", "--health-addr", "127.0.0.1:0")
		select {
		case <-stderr.when("/readyz\n"):
		case <-time.After(30 * time.Second): // a bound on the failure only
			t.Fatalf("no health checks announced:\n%s", stderr)
		}
		m := regexp.MustCompile(`Health checks on http://(127\.0\.0\.1:\d+)/livez and /readyz`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("the worker printed:\n%s", stderr)
		}
		get := func(path string) (int, string) {
			t.Helper()
			resp, err := http.Get("http://" + m[1] + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := get("/livez"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/livez: %d %q", code, body)
		}
		// Starting until its worker's first heartbeat, then ready.
		for tries := 0; ; tries++ {
			code, body := get("/readyz")
			if code == http.StatusOK && body == "ready\n" {
				break
			}
			if code != http.StatusServiceUnavailable || body != "starting: not registered yet\n" || tries == 1000 {
				t.Fatalf("/readyz: %d %q", code, body)
			}
			time.Sleep(10 * time.Millisecond) // the child's first heartbeat, a write away
		}
		if code, _ := get("/metrics"); code != http.StatusNotFound {
			t.Errorf("/metrics on the health address: %d", code)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if _, err := http.Get("http://" + m[1] + "/livez"); err == nil {
			t.Error("the health checks still answer after the worker stopped")
		}
	})
}
