package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestTable: each figure's median and range of each build, and the
// median of the ratios pair by pair, not the ratio of the medians; a
// figure no run has (latency, with --latency 0) is left out.
func TestTable(t *testing.T) {
	read := func(s string) result {
		var r result
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	runs := [2][]result{
		{read(`{"work":{"jobs_per_second":100},"dispatch":{"jobs_per_second":1000}}`),
			read(`{"work":{"jobs_per_second":200},"dispatch":{"jobs_per_second":1000}}`),
			read(`{"work":{"jobs_per_second":400},"dispatch":{"jobs_per_second":1000}}`)},
		{read(`{"work":{"jobs_per_second":110},"dispatch":{"jobs_per_second":900}}`),
			read(`{"work":{"jobs_per_second":180},"dispatch":{"jobs_per_second":1100}}`),
			read(`{"work":{"jobs_per_second":480},"dispatch":{"jobs_per_second":1000}}`)},
	}
	want := "| | before | after | after / before, by pair |\n|---|---:|---:|---:|\n" +
		"| work, jobs/s | 200 [100–400] | 180 [110–480] | 1.100 [0.900–1.200] |\n" +
		"| dispatch, jobs/s | 1000 [1000–1000] | 1000 [900–1100] | 1.000 [0.900–1.100] |\n"
	if got := table(runs); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
	runs[0][0].Latency = &struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	}{0.5, 2}
	runs[1][0].Latency = &struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	}{0.25, 3}
	if got := table(runs); !strings.Contains(got, "| latency p99, ms | 2.000 [2.000–2.000] | 3.000 [3.000–3.000] | 1.500 [1.500–1.500] |\n") {
		t.Fatalf("table with latencies:\n%s", got)
	}
}

// TestFlags: the mistakes benchpairs refuses, each naming what to do.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-against is required: the commit to measure against, such as ba4b1c8 or main~3"},
		{[]string{"-against", "x", "-pairs", "0"}, "-pairs is 0; want 1 to 100"},
		{[]string{"-against", "x", "-sqlite=false", "-postgres", ""}, "nothing to measure on: -sqlite=false and no -postgres URL"},
		{[]string{"-against", "x", "--", "--jobs", "10", "--json"}, "queue:bench is given --json already: leave it out"},
		{[]string{"-against", "x", "-after-env", "KEEP"}, `invalid value "KEEP" for flag -after-env: "KEEP" is no KEY=VALUE`},
	} {
		if _, err := parse(c.args, io.Discard); err == nil || err.Error() != c.want {
			t.Errorf("benchpairs %v: %v; want %q", c.args, err, c.want)
		}
	}
	o, err := parse([]string{"-against", "main~1", "-postgres", "", "-after-env", "A=1", "-after-env", "B=", "--", "--jobs", "10"}, io.Discard)
	if err != nil || o.against != "main~1" || o.pairs != 5 || !o.sqlite || o.postgres != "" || strings.Join(o.bench, " ") != "--jobs 10" ||
		strings.Join(o.afterEnv, " ") != "A=1 B=" {
		t.Fatalf("parse: %+v, %v", o, err)
	}
}
