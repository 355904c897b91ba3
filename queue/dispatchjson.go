package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
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

// dispatchCommand is queue:dispatch: a job of a type, its payload JSON
// from the command line.
func dispatchCommand() app.Command {
	return app.Command{
		Name:      "queue:dispatch",
		Usage:     "Queue a job of a registered type, its payload given as JSON",
		ArgsUsage: "NAME [JSON]",
		Description: "Queues a job of type NAME (such as contacts.export) with the payload JSON, decoded into the\n" +
			"job's type with unknown fields refused, and prints its id. JSON may be left out only for a type\n" +
			"without fields.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "delay", Usage: "run it after this long, such as 10m", DefaultText: "at once"},
			&cli.StringFlag{Name: "queue", Usage: "queue it on this queue", DefaultText: "the job type's own, or queue.default_queue"},
		},
		Action: app.Uses(func(c *cli.Context, q *Queue) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return fmt.Errorf("queue:dispatch takes a job type and its JSON payload, such as: queue:dispatch contacts.export '{\"company_id\": \"c1\"}'; %s", q.registered(""))
			}
			e, err := q.envelopeFromJSON(c.App.Name, c.Args().Get(0), []byte(c.Args().Get(1)))
			if err != nil {
				return err
			}
			if c.Duration("delay") < 0 {
				return fmt.Errorf("queue:dispatch: --delay must not be negative, not %s", c.Duration("delay"))
			}
			e.Delay = c.Duration("delay")
			if c.IsSet("queue") {
				e.Options.Queue = strings.TrimSpace(c.String("queue"))
				if err := checkQueue(e.Options.Queue); err != nil {
					return err
				}
			}
			id, err := q.Push(c.Context, e)
			if err != nil {
				return err
			}
			o, _ := q.resolve(e.Name, e.Options)
			when := ""
			if e.Delay > 0 {
				when = ", due in " + e.Delay.String()
			}
			fmt.Fprintf(c.App.Writer, "Queued %s on %s%s: job %s\n", e.Name, o.Queue, when, id)
			if left := q.unworked([]string{o.Queue}); left != nil {
				fmt.Fprintln(c.App.ErrWriter, "Warning: "+q.leftOut(left))
			}
			return nil
		}),
	}
}
