package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid matches every [*Error] with errors.Is.
var ErrInvalid = errors.New("invalid config")

// Error is an invalid or unknown configuration value, an unknown section,
// or an APP_ENV without a file. Its message shows the value through
// [Redact], and as xxxxx when the key's name says it is a secret (it
// holds password, secret, token, credential or the like).
type Error struct {
	Key     string // the key, such as "queue.workers"; for an unknown section, its name
	Value   string // the value as given
	Source  string // where it came from: a file, "env APP_QUEUE__WORKERS", "overrides", "default"
	Allowed string // what the key accepts; for an unknown key or section, the nearest known one or those there are
	kind    errorKind
	file    string // missingFile: the file looked for
}

type errorKind int

const (
	invalidValue errorKind = iota
	unknownKey
	unknownSection
	missingFile // APP_ENV names an environment without a file
)

// Error names the key, the value (redacted), where it came from and what
// is allowed.
func (e *Error) Error() string {
	from := ""
	if e.Source != "" { // an *Error of a Validate method called outside Config
		from = " (from " + e.Source + ")"
	}
	switch e.kind {
	case unknownKey:
		return fmt.Sprintf("config: unknown key %s = %q%s: %s", e.Key, e.shown(), from, e.Allowed)
	case unknownSection:
		return fmt.Sprintf("config: unknown section [%s]%s: %s", e.Key, from, e.Allowed)
	case missingFile:
		return fmt.Sprintf("config: no file %s for %s %q%s; %s", e.file, e.Key, e.shown(), from, e.Allowed)
	}
	return fmt.Sprintf("config: invalid value for %s: %q%s; allowed: %s", e.Key, e.shown(), from, e.Allowed)
}

// shown is the value as the message shows it: without its secrets.
func (e *Error) shown() string {
	if e.Value != "" && isSecret(e.Key) {
		return masked
	}
	return Redact(e.Value)
}

// Is reports whether target is [ErrInvalid].
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Invalid returns the [*Error] for key holding value, for a section's
// Validate method. The Config fills in where the value came from.
func Invalid(key string, value any, allowed string) error {
	return &Error{Key: key, Value: fmt.Sprint(value), Allowed: allowed}
}

var durationType = reflect.TypeFor[time.Duration]()

// decode fills the struct out points to from the keys under prefix and
// returns every key it knows, set or not.
func (c *Config) decode(prefix string, out any) ([]string, error) {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: section [%s]: decode needs a pointer to a struct, not %T", prefix, out)
	}
	keys, err := c.decodeStruct(prefix, v.Elem())
	if err != nil {
		return nil, err
	}
	if val, ok := out.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Source == "" {
				ce.Source = c.Source(ce.Key)
			}
			return nil, err
		}
	}
	return keys, nil
}

func (c *Config) decodeStruct(prefix string, v reflect.Value) ([]string, error) {
	var keys []string
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("koanf")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		key := prefix + "." + name
		field := v.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			sub, err := c.decodeStruct(key, field)
			if err != nil {
				return nil, err
			}
			keys = append(keys, sub...)
			continue
		}
		keys = append(keys, key)
		if c.k.Exists(key) {
			if err := set(field, c.k.Get(key)); err != nil {
				return nil, &Error{Key: key, Value: show(c.k.Get(key)), Source: c.Source(key), Allowed: err.Error()}
			}
		}
		if allowed, ok := check(field, f.Tag.Get("validate")); !ok {
			return nil, &Error{Key: key, Value: show(field.Interface()), Source: c.Source(key), Allowed: allowed}
		}
	}
	return keys, nil
}

// show renders a value as the user wrote it: lists comma-separated.
func show(v any) string {
	switch v := v.(type) {
	case []string:
		return strings.Join(v, ",")
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// set converts raw, as TOML or the environment gives it, into field. Its
// error says what the field accepts.
func set(field reflect.Value, raw any) error {
	t := field.Type()
	switch {
	case t == durationType:
		s, ok := raw.(string)
		d, err := time.ParseDuration(s)
		if !ok || err != nil {
			return errors.New("a duration such as 500ms, 30s or 5m")
		}
		field.SetInt(int64(d))
	case t.Kind() == reflect.String:
		s, ok := raw.(string)
		if !ok {
			return errors.New("a string")
		}
		field.SetString(s)
	case t.Kind() == reflect.Bool:
		switch b := raw.(type) {
		case bool:
			field.SetBool(b)
		case string:
			parsed, err := strconv.ParseBool(b)
			if err != nil {
				return errors.New("true or false")
			}
			field.SetBool(parsed)
		default:
			return errors.New("true or false")
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		n, ok := toInt(raw)
		if !ok || field.OverflowInt(n) {
			return errors.New("a whole number")
		}
		field.SetInt(n)
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		var f float64
		var err error
		switch x := raw.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		case string:
			f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
		default:
			err = errors.New("not a number")
		}
		if err != nil {
			return errors.New("a number")
		}
		field.SetFloat(f)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		list := []string{} // a key set to an empty list is empty, not unset (nil)
		switch x := raw.(type) {
		case string: // from the environment: "" is the empty list
			if strings.TrimSpace(x) == "" {
				break
			}
			for part := range strings.SplitSeq(x, ",") {
				if part = strings.TrimSpace(part); part == "" {
					return errors.New("a comma-separated list with no empty item")
				}
				list = append(list, part)
			}
		case []string:
			list = x
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return errors.New("a list of strings")
				}
				list = append(list, s)
			}
		default:
			return errors.New("a list of strings (in the environment: comma-separated)")
		}
		field.Set(reflect.ValueOf(list).Convert(t))
	default:
		return fmt.Errorf("a value of type %s, which config cannot decode", t)
	}
	return nil
}

func toInt(raw any) (int64, bool) {
	switch x := raw.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// check applies a validate tag ("required,min=1,max=64", "oneof=a b") to
// field; when the value breaks a rule it returns what is allowed.
func check(field reflect.Value, tag string) (string, bool) {
	if tag == "" {
		return "", true
	}
	var rules []string
	ok := true
	for rule := range strings.SplitSeq(tag, ",") {
		name, arg, _ := strings.Cut(rule, "=")
		switch name {
		case "required":
			rules = append(rules, "a non-empty value")
			if field.IsZero() || (field.Kind() == reflect.Slice && field.Len() == 0) {
				ok = false
			}
		case "min", "max":
			limit, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				panic(fmt.Sprintf("config: bad validate tag %q", tag))
			}
			n := number(field)
			if name == "min" {
				rules = append(rules, "at least "+arg)
				ok = ok && n >= limit
			} else {
				rules = append(rules, "at most "+arg)
				ok = ok && n <= limit
			}
		case "oneof":
			options := strings.Fields(arg)
			rules = append(rules, "one of "+strings.Join(options, ", "))
			values := []string{fmt.Sprint(field.Interface())}
			if field.Kind() == reflect.Slice {
				values = field.Interface().([]string)
			}
			for _, v := range values {
				found := false
				for _, o := range options {
					found = found || v == o
				}
				ok = ok && found
			}
		default:
			panic(fmt.Sprintf("config: unknown validate rule %q in %q", name, tag))
		}
	}
	return strings.Join(rules, ", "), ok
}

// number is the value min and max compare: a number itself, or the length
// of a string or list.
func number(field reflect.Value) float64 {
	switch field.Kind() {
	case reflect.String, reflect.Slice:
		return float64(field.Len())
	case reflect.Float32, reflect.Float64:
		return field.Float()
	}
	return float64(field.Int())
}
