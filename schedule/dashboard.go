package schedule

import (
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/queue/dashboard"
)

//go:embed templates/dashboard.html
var dashboardTemplate string

// DashboardPage is the schedules page of the queue dashboard: each entry
// with its schedule, next tick, last claimed tick (linked to its job)
// and job, and for operators a Run now that dispatches the entry's job at
// once, as schedule:run does. [Module] adds it to the app's dashboard.
func DashboardPage(s *Scheduler) dashboard.Page {
	return dashboard.Page{
		Name:     "Schedules",
		Path:     "/schedules",
		Template: dashboardTemplate,
		Show: func(r *http.Request) (any, error) {
			entries, err := s.Status(r.Context())
			if err != nil {
				return nil, err
			}
			now := s.clock.Now()
			rows := make([]scheduleRow, len(entries))
			for i, e := range entries {
				rows[i] = scheduleRow{EntryStatus: e}
				if !e.Next.IsZero() {
					rows[i].NextIn = e.Next.Sub(now).Round(time.Second).String()
				}
			}
			return struct{ Rows []scheduleRow }{rows}, nil
		},
		Actions: map[string]func(*http.Request, string) (url.Values, error){
			"run": func(r *http.Request, name string) (url.Values, error) {
				done, err := s.RunNow(r.Context(), name)
				switch {
				case errors.Is(err, ErrNoEntry):
					return nil, &dashboard.Refusal{Status: http.StatusNotFound, Message: fmt.Sprintf("The app schedules no entry %q.", name)}
				case err != nil:
					return nil, err
				}
				notes := url.Values{"entry": {name}}
				if !done.Skipped {
					notes.Set("job", done.JobID)
				}
				return notes, nil
			},
		},
		Flash: func(action string, notes url.Values) string {
			if action != "run" || !ValidEntryName(notes.Get("entry")) {
				return ""
			}
			if id, err := uuid.FromString(notes.Get("job")); err == nil {
				return "Dispatched the job of " + notes.Get("entry") + " now: job " + id.String() + "."
			}
			return "Ran " + notes.Get("entry") + " now: it gave no job."
		},
	}
}

// scheduleRow is a row of the schedules page.
type scheduleRow struct {
	EntryStatus
	NextIn string // how long until Next, in words
}
