package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/navree/navree/queue"
)

// parsePages parses each page of templates/ with the layout and the
// partials; a partial is also a page of its own, for htmx.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse templates: %w", err)
	}
	pages := map[string]*template.Template{}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	for _, path := range names {
		name := strings.TrimPrefix(path, "templates/")
		if name == "layout.html" || name == "partials.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(files, path)
		if err != nil {
			return nil, fmt.Errorf("dashboard: parse %s: %w", path, err)
		}
		pages[name] = t
	}
	for _, partial := range []string{"queue-rows", "payload", "layout"} {
		pages[partial] = base
	}
	return pages, nil
}

var funcs = template.FuncMap{
	"count":    count,
	"duration": duration,
	"span":     func(d time.Duration) string { return durationLabel(d.Seconds()) },
	"time":     timeOf,
	"short":    shortID,
	"perMin":   perMinute,
	"backoff":  backoffText,
	"timeout":  timeoutText,
	"query":    query,
	"withData": func(v view, data any) view { v.Data = data; return v },
	"progress": progressOf,
	"json":     func(b json.RawMessage) string { return string(b) },
	"maxGraph": func() int { return maxGraphSteps },
	"cut": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		for n > 0 && !utf8Start(s[n]) {
			n--
		}
		return s[:n] + "…"
	},
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// count shows a count of Stats: one over queue.CountLimit as "100000+".
func count(n int) string {
	if n > queue.CountLimit {
		return strconv.Itoa(queue.CountLimit) + "+"
	}
	return strconv.Itoa(n)
}

// duration shows a wait to the second: "3m12s", "—" for none.
func duration(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}

// timeOf shows a time in UTC, "—" for the zero time.
func timeOf(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// span is a duration without its zero units: "5m", "1h30m", "1.5s".
func span(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// backoffText is a backoff as the queue stores it, in words:
// "exponential:1000:300000" is "exponential, 1s doubling up to 5m",
// "fixed:30000" is "fixed 30s". One the queue cannot read is shown as
// stored, saying so.
func backoffText(stored string) string {
	parts := strings.Split(stored, ":")
	ms := make([]time.Duration, len(parts)-1)
	for i, p := range parts[1:] {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			ms = nil
			break
		}
		ms[i] = time.Duration(n) * time.Millisecond
	}
	switch {
	case parts[0] == "fixed" && len(ms) == 1:
		return "fixed " + span(ms[0])
	case parts[0] == "exponential" && len(ms) == 2:
		return "exponential, " + span(ms[0]) + " doubling up to " + span(ms[1])
	}
	return fmt.Sprintf("%q (not a backoff the queue can read: a failed attempt fails the job for good)", stored)
}

// timeoutText is a job's time limit: "10m", or "no limit" for 0.
func timeoutText(d time.Duration) string {
	if d <= 0 {
		return "no limit"
	}
	return span(d)
}

// shortID is the last block of a job's id, enough to tell jobs apart on
// a page: the first blocks of a UUID v7 are the time it was made, which
// jobs dispatched together share.
func shortID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// query encodes key/value pairs as a URL query, leaving out empty
// values: {{query "state" "failed" "queue" .Queue}}. It is a
// template.URL, so that html/template keeps its '=' and '&' (and escapes
// it for the attribute); every key and value in it is encoded.
func query(pairs ...any) (template.URL, error) {
	if len(pairs)%2 != 0 {
		return "", fmt.Errorf("query: odd number of arguments")
	}
	v := url.Values{}
	for i := 0; i < len(pairs); i += 2 {
		k, val := fmt.Sprint(pairs[i]), fmt.Sprint(pairs[i+1])
		if val != "" {
			v.Set(k, val)
		}
	}
	return template.URL(v.Encode()), nil
}
