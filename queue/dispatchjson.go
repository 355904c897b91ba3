package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/navree/navree/config"
)

// envelopeFromJSON makes the envelope of a registered job type from its
// payload as JSON, for the command line (queue:dispatch): payload is
// decoded into the job's Go type with unknown fields refused, so a typo
// names the field, and the job's own options apply. An unknown type is an
// [*UnknownJobError] whose message lists the registered ones.
func (q *Queue) envelopeFromJSON(name string, payload []byte) (Envelope, error) {
	reg, ok := q.table.Load().jobs[name]
	if !ok || name == (benchJob{}).JobName() {
		return Envelope{}, fmt.Errorf("%w; %s", &UnknownJobError{Name: name}, q.registered(name))
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	}
	if reg.typ == reflect.TypeFor[json.RawMessage]() { // a job type made at run time: any JSON value
		if !json.Valid(payload) {
			return Envelope{}, fmt.Errorf("queue: the payload of %s is not JSON", name)
		}
		return Envelope{Name: name, Payload: payload}, nil
	}
	job := reflect.New(reg.typ)
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(job.Interface()); err != nil {
		return Envelope{}, fmt.Errorf("queue: the payload does not decode into %s (%s): %v", name, reg.typ, err)
	}
	if dec.More() {
		return Envelope{}, fmt.Errorf("queue: the payload of %s has more than one JSON value", name)
	}
	return EnvelopeOf(job.Elem().Interface().(Job))
}

// registered lists the job types a command line may name, and the one
// nearest to name.
func (q *Queue) registered(name string) string {
	var names []string
	for n, reg := range q.table.Load().jobs {
		if n != (benchJob{}).JobName() && n == reg.name { // not an alias
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "this app registers no job type"
	}
	list := "the registered job types are " + strings.Join(names, ", ")
	if near, ok := config.Nearest(name, names); ok {
		return "did you mean " + near + "? " + list
	}
	return list
}
