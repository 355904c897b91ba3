package queue

import (
	"context"
	"errors"
	"testing"
)

type fuzzJob struct {
	CompanyID string   `json:"company_id"`
	Tags      []string `json:"tags"`
	Count     int      `json:"count"`
}

func (fuzzJob) JobName() string { return "fuzz.job" }

// FuzzPayloadDecoding feeds any stored payload to a job's handler: it
// either decodes and runs or fails with a PayloadError, never panics.
func FuzzPayloadDecoding(f *testing.F) {
	f.Add([]byte(`{"company_id":"c1","tags":["a"],"count":2}`))
	f.Add([]byte(`{"company_id":5}`))
	f.Add([]byte(`{not json`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Add([]byte(`{"count":1e400}`))
	ran := false
	reg := HandlerOf[fuzzJob](HandlerFunc[fuzzJob](func(context.Context, fuzzJob, JobContext) error {
		ran = true
		return nil
	}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ran = false
		err := reg.handle(context.Background(), payload, JobContext{Name: "fuzz.job"})
		var perr *PayloadError
		switch {
		case err == nil && !ran:
			t.Fatal("no error, and the handler did not run")
		case err != nil && !errors.As(err, &perr):
			t.Fatalf("not a PayloadError: %v", err)
		}
	})
}
