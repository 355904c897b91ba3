package control

import (
	"strings"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// TestAPartAddsOnlyWhenItsShapeAsksForIt: each feature's SQL is in a
// statement exactly when the shape asks for the feature, on both
// databases, so that a search that does not do a feature costs nothing
// for it.
func TestAPartAddsOnlyWhenItsShapeAsksForIt(t *testing.T) {
	marks := map[string]string{"fairness": "@place", "priority": "priority", "rate limits": "queue_rates"}
	for _, d := range []sqlkit.Dialect{sqlkit.SQLite, sqlkit.Postgres} {
		for f := range driver.AllFeatures + 1 {
			for _, only := range []bool{false, true} {
				shape := plan.Shape{Features: f, Only: only, Size: 4}
				p := plan.Of(d, shape, Parts())
				text := p.Text(d, "id")
				if in := strings.Contains(text, "@names"); in != shape.Only {
					t.Errorf("PG %v %+v: the known types' filter in it = %v; want %v:\n%s", d.PG, shape, in, shape.Only, text)
				}
				for _, part := range Parts() {
					mark := marks[part.Name]
					if mark == "" {
						t.Fatalf("no mark for the part %q", part.Name)
					}
					// The columns of a plan of several searches name priority and
					// fair_seq for the order of them together: look at the filters.
					var filters []string
					for _, s := range p.Searches {
						filters = append(filters, s.Where...)
					}
					if in := strings.Contains(strings.Join(filters, " "), mark); in != (shape.Features&part.Feature != 0) {
						t.Errorf("PG %v %+v: %s in the filters = %v; want %v:\n%s", d.PG, shape, mark, in, shape.Features&part.Feature != 0, text)
					}
				}
				if rendered := plan.Render(d, text).SQL; strings.Contains(rendered, "@") {
					t.Errorf("PG %v %+v: a name left unrendered: %s", d.PG, shape, rendered)
				}
			}
		}
	}
}

// TestEveryFeatureIsOneControl: each bit of driver.AllFeatures is the
// Feature of exactly one control, with its tests and its part, so that a
// feature added to driver.Features without its row here fails.
func TestEveryFeatureIsOneControl(t *testing.T) {
	var seen driver.Features
	for _, c := range All {
		switch {
		case c.Feature == 0 || c.Feature&(c.Feature-1) != 0:
			t.Errorf("%s: Feature %b; want one bit", c.Name, c.Feature)
		case seen&c.Feature != 0:
			t.Errorf("%s: Feature %b is another control's too", c.Name, c.Feature)
		case c.Has == nil || c.Plan == nil || c.Waiting == "" || c.Running == "":
			t.Errorf("%s: a control without its test of a job, its tests in SQL or its part of a plan", c.Name)
		}
		seen |= c.Feature
	}
	if seen != driver.AllFeatures {
		t.Errorf("the controls' features are %b; want every feature, %b", seen, driver.AllFeatures)
	}
}

// TestOfReadsEachControl: Of gives a job each feature its control says
// it has, and none other.
func TestOfReadsEachControl(t *testing.T) {
	for _, c := range []struct {
		job  driver.Job
		want driver.Features
	}{
		{driver.Job{}, 0},
		{driver.Job{Priority: -3}, driver.FeaturePriority},
		{driver.Job{RateKey: "api"}, driver.FeatureRate},
		{driver.Job{FairKey: "acme"}, driver.FeatureFair},
		{driver.Job{Priority: 2, RateKey: "api", FairKey: "acme"}, driver.AllFeatures},
	} {
		if got := Of(&c.job); got != c.want {
			t.Errorf("Of(%+v) = %b; want %b", c.job, got, c.want)
		}
	}
}
