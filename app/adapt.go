package app

import (
	"fmt"
	"reflect"
	"regexp"
)

// Adapt turns constructor, a func(deps...) returning a want (a value of
// that type, or of one implementing it) and optionally an error, into a
// function of the same parameters that returns adapt of its result: what
// a module hands fx.Provide to build a value of its own from a user's
// constructor, such as queue.Register's handler registration. A
// constructor of another shape is an error saying what it must be, and
// a nil result an error of the function it returns.
func Adapt[T any](constructor any, want reflect.Type, adapt func(built reflect.Value) T) (any, error) {
	errorType := reflect.TypeFor[error]()
	ct := reflect.TypeOf(constructor)
	if ct == nil || ct.Kind() != reflect.Func || ct.NumOut() < 1 || ct.NumOut() > 2 || (ct.NumOut() == 2 && ct.Out(1) != errorType) ||
		!(ct.Out(0) == want || want.Kind() == reflect.Interface && ct.Out(0).Implements(want)) {
		return nil, fmt.Errorf("the constructor must be a func(deps...) returning %s (and an error), not %s", typeName(want), typeName(ct))
	}
	in := make([]reflect.Type, ct.NumIn())
	for i := range in {
		in[i] = ct.In(i)
	}
	out := reflect.TypeFor[T]()
	fn := reflect.MakeFunc(reflect.FuncOf(in, []reflect.Type{out, errorType}, false), func(args []reflect.Value) []reflect.Value {
		results := reflect.ValueOf(constructor).Call(args)
		if len(results) == 2 && !results[1].IsNil() {
			return []reflect.Value{reflect.Zero(out), results[1]}
		}
		switch results[0].Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice:
			if results[0].IsNil() {
				err := fmt.Errorf("the constructor %s returned a nil %s", typeName(ct), typeName(ct.Out(0)))
				return []reflect.Value{reflect.Zero(out), reflect.ValueOf(&err).Elem()}
			}
		}
		return []reflect.Value{reflect.ValueOf(adapt(results[0])), reflect.Zero(errorType)}
	})
	return fn.Interface(), nil
}

// importPath matches the import paths reflect writes in the names of
// generic types' arguments.
var importPath = regexp.MustCompile(`[\w.-]+/`)

// typeName is t as Go code names it: events.Handler[contacts.Exported],
// not events.Handler[github.com/acme/crm/contacts.Exported].
func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return importPath.ReplaceAllString(t.String(), "")
}
