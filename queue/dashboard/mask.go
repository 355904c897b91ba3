package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// masked replaces the value of a masked key.
const masked = `"[masked]"`

// maskJSON returns doc indented, in its own key order, with the value of
// every object key in keys (lower case) replaced by "[masked]", at any
// depth. It fails on a document that is not one JSON value.
func maskJSON(doc []byte, keys map[string]bool) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out strings.Builder
	if err := writeValue(&out, dec, keys, 0); err != nil {
		return "", err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("mask: more than one JSON value")
	}
	return out.String(), nil
}

// writeValue copies the next value of dec to out, indented by depth.
func writeValue(out *strings.Builder, dec *json.Decoder, keys map[string]bool, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("mask: %w", err)
	}
	indent := func(d int) { out.WriteString("\n" + strings.Repeat("  ", d)) }
	switch tok {
	case json.Delim('{'):
		out.WriteByte('{')
		n := 0
		for dec.More() {
			if n > 0 {
				out.WriteByte(',')
			}
			n++
			key, err := dec.Token()
			if err != nil {
				return fmt.Errorf("mask: %w", err)
			}
			indent(depth + 1)
			writeScalar(out, key)
			out.WriteString(": ")
			if k, _ := key.(string); keys[strings.ToLower(k)] {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return fmt.Errorf("mask: %w", err)
				}
				out.WriteString(masked)
				continue
			}
			if err := writeValue(out, dec, keys, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return fmt.Errorf("mask: %w", err)
		}
		if n > 0 {
			indent(depth)
		}
		out.WriteByte('}')
	case json.Delim('['):
		out.WriteByte('[')
		n := 0
		for dec.More() {
			if n > 0 {
				out.WriteByte(',')
			}
			n++
			indent(depth + 1)
			if err := writeValue(out, dec, keys, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return fmt.Errorf("mask: %w", err)
		}
		if n > 0 {
			indent(depth)
		}
		out.WriteByte(']')
	default:
		writeScalar(out, tok)
	}
	return nil
}

// writeScalar writes a string, number, boolean or null token as JSON.
func writeScalar(out *strings.Builder, tok json.Token) {
	switch v := tok.(type) {
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // the page escapes it
		_ = enc.Encode(v)
		out.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	case json.Number:
		out.WriteString(v.String())
	case bool:
		fmt.Fprint(out, v)
	case nil:
		out.WriteString("null")
	}
}
