package config

import (
	"slices"
	"strings"
)

// masked is what a secret is shown as.
const masked = "xxxxx"

// Redact returns s with every password it holds replaced by xxxxx, for
// errors and logs. It knows the forms PostgreSQL connection strings take:
//
//   - a URL's user:password@ (postgres://app:xxxxx@db/crm);
//   - a URL's query parameters password= and sslpassword=, in any letter
//     case and with the key percent-encoded or not
//     (postgres://app@db/crm?password=xxxxx);
//   - the key=value form (host=db user=app password=xxxxx), a value quoted
//     or not (password='a b\'c').
//
// A parameter whose name says it is a secret (token=, api_key=…) is masked
// too. A password holding characters a URL reserves (@ : / ? # %),
// encoded or not, can make a URL ambiguous; Redact then masks more rather
// than less: everything from the first ':' after the scheme to the last
// '@', and a parameter's value up to the next &KEY= or the end.
func Redact(s string) string {
	start, isURL := 0, false
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		start, isURL = i+3, true
	}
	var spans [][2]int // [from, to) of each secret
	if at := strings.LastIndexByte(s[start:], '@'); at >= 0 {
		if colon := strings.IndexByte(s[start:start+at], ':'); colon >= 0 {
			spans = append(spans, [2]int{start + colon + 1, start + at})
		}
	}
	for eq := start; eq < len(s); eq++ {
		if s[eq] != '=' || !isSecret(unescape(keyBefore(s[start:eq]))) {
			continue
		}
		from := eq + 1
		if !isURL {
			for from < len(s) && isSpace(s[from]) {
				from++
			}
		}
		spans = append(spans, [2]int{from, valueEnd(s, from, isURL)})
	}
	return mask(s, spans)
}

// secretWords are the parts of a key's name that say it is a secret.
var secretWords = []string{"password", "passwd", "secret", "token", "credential", "apikey", "api_key", "private_key"}

// isSecret reports whether the name of a key, such as "mail.password" or
// the sslpassword of a connection URL, says its value is a secret: it
// holds one of secretWords, in any letter case.
func isSecret(key string) bool {
	key = strings.ToLower(key)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(key, w) })
}

func isScheme(s string) bool {
	for i := range len(s) {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// isKeyByte reports whether c can be part of a parameter's name, as
// written in a URL (percent-encoded perhaps) or in key=value form.
func isKeyByte(c byte) bool { return !isSpace(c) && !strings.ContainsRune("=&?;/@:,'\"\\", rune(c)) }

// keyBefore returns the name that ends s, the text before an '=', spaces
// between the name and the '=' skipped.
func keyBefore(s string) string {
	end := len(s)
	for end > 0 && isSpace(s[end-1]) {
		end--
	}
	from := end
	for from > 0 && isKeyByte(s[from-1]) {
		from--
	}
	return s[from:end]
}

// valueEnd returns where the value that starts at s[from] ends. In a URL
// it runs to the next &KEY= (a stray & belongs to the value) or the end;
// in key=value form, to the first space neither quoted nor escaped by a
// backslash, or the end.
func valueEnd(s string, from int, isURL bool) int {
	if isURL {
		for i := from; i < len(s); i++ {
			if s[i] != '&' {
				continue
			}
			j := i + 1
			for j < len(s) && isKeyByte(s[j]) {
				j++
			}
			if j > i+1 && j < len(s) && s[j] == '=' {
				return i
			}
		}
		return len(s)
	}
	quoted := false
	for i := from; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '\'':
			quoted = !quoted // what follows a closing quote, up to a space, is the value's too
		case !quoted && isSpace(s[i]):
			return i
		}
	}
	return len(s)
}

// unescape decodes the valid %XX escapes of s and leaves the rest.
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := hexValue(s[i+1])
			lo, ok2 := hexValue(s[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// mask replaces each non-empty span of s by masked, spans that overlap or
// touch as one.
func mask(s string, spans [][2]int) string {
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	done, open := 0, false // s[:done] is written; open: it ends with a mask
	for _, sp := range spans {
		switch {
		case sp[1] <= sp[0]:
			continue
		case open && sp[0] <= done:
			done = max(done, sp[1]) // the mask written covers it
			continue
		}
		b.WriteString(s[done:sp[0]])
		b.WriteString(masked)
		done, open = sp[1], true
	}
	b.WriteString(s[done:])
	return b.String()
}
