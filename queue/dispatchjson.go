package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/config"
)

// envelopeFromJSON makes the envelope of a registered job type from its
// payload as JSON, for the command line (queue:dispatch): payload is
// decoded into the job's Go type with unknown fields refused, so a typo
// names the field, and the job's own options apply. An unknown type is an
// [*UnknownJobError] whose message lists the registered ones. No payload
// is {} for a type without fields; a type with fields refuses it, showing
// an example run of the app program with them.
func (q *Queue) envelopeFromJSON(program, name string, payload []byte) (Envelope, error) {
	reg, ok := q.table.Load().jobs[name]
	if !ok || name == (benchJob{}).JobName() {
		return Envelope{}, fmt.Errorf("%w; %s", &UnknownJobError{Name: name}, q.registered(name))
	}
	raw := reg.typ == reflect.TypeFor[json.RawMessage]() // a job type made at run time: any JSON value
	if len(bytes.TrimSpace(payload)) == 0 {
		if example := payloadExample(reg.typ); example != "{}" && !raw {
			return Envelope{}, fmt.Errorf("queue:dispatch: %s takes a payload: give it as JSON, such as: %s queue:dispatch %s '%s'", name, program, name, example)
		}
		payload = []byte("{}")
	}
	if raw {
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

// payloadExample is a payload of a job of type t with every field JSON
// sees at its zero value, a list or map empty: {"company_id": "", "rows": []};
// {} for a type without such fields.
func payloadExample(t reflect.Type) string {
	var fields []string
	seen := map[reflect.Type]bool{} // a struct embedding itself through a pointer
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			embedded := f.Type
			if embedded.Kind() == reflect.Pointer {
				embedded = embedded.Elem()
			}
			switch {
			case f.Anonymous && name == "" && embedded.Kind() == reflect.Struct: // its fields are the job's
				add(embedded)
				continue
			case name == "-" || !f.IsExported():
				continue
			case name == "":
				name = f.Name
			}
			value := "null"
			switch f.Type.Kind() {
			case reflect.Slice:
				value = "[]"
			case reflect.Map:
				value = "{}"
			default:
				if b, err := json.Marshal(reflect.Zero(f.Type).Interface()); err == nil {
					value = string(b)
				}
			}
			fields = append(fields, strconv.Quote(name)+": "+value)
		}
	}
	add(t)
	return "{" + strings.Join(fields, ", ") + "}"
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
