package mail

import (
	"bytes"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	texttemplate "text/template"

	"github.com/navree/navree/config"
)

// The suffixes of template files, and the base name of layouts.
const (
	htmlSuffix = ".html.tmpl"
	textSuffix = ".txt.tmpl"
	layoutName = "layout"
)

// ErrNoTemplate is returned for a template mail whose name no file system
// given to [Templates] holds.
var ErrNoTemplate = errors.New("no such mail template")

// ErrRender matches the error of a template that does not render with
// the data it was given (a missing key, a failing function): it fails
// the same way each time it is tried.
var ErrRender = errors.New("mail template does not render")

// renderError is a template's error that matches [ErrRender], its text
// unchanged.
type renderError struct{ err error }

func (e renderError) Error() string        { return e.err.Error() }
func (e renderError) Unwrap() error        { return e.err }
func (e renderError) Is(target error) bool { return target == ErrRender }

// templates are the parsed template mail of an app, by name.
type templates struct {
	html map[string]*htmltemplate.Template
	text map[string]*texttemplate.Template
}

// parseTemplates parses every template of each file system, with its
// folder's layout. A file that does not parse, or a name two file
// systems both hold, is an error naming the file.
func parseTemplates(systems []fs.FS) (*templates, error) {
	ts := &templates{html: map[string]*htmltemplate.Template{}, text: map[string]*texttemplate.Template{}}
	for _, fsys := range systems {
		err := fs.WalkDir(fsys, ".", func(file string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			base := path.Base(file)
			if d.IsDir() || strings.HasPrefix(base, layoutName+".") {
				return nil
			}
			switch {
			case strings.HasSuffix(file, htmlSuffix):
				name := strings.TrimSuffix(file, htmlSuffix)
				if _, dup := ts.html[name]; dup {
					return fmt.Errorf("%s is given twice, by two mail.Templates", file)
				}
				t, err := parse(htmltemplate.New, fsys, file, htmlSuffix)
				ts.html[name] = t
				return err
			case strings.HasSuffix(file, textSuffix):
				name := strings.TrimSuffix(file, textSuffix)
				if _, dup := ts.text[name]; dup {
					return fmt.Errorf("%s is given twice, by two mail.Templates", file)
				}
				t, err := parse(texttemplate.New, fsys, file, textSuffix)
				ts.text[name] = t
				return err
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("mail: templates: %w", err)
		}
	}
	return ts, nil
}

// source reads file and, if its folder has one, the layout with suffix.
func source(fsys fs.FS, file, suffix string) (body, layout []byte, layoutFile string, err error) {
	if body, err = fs.ReadFile(fsys, file); err != nil {
		return nil, nil, "", err
	}
	layoutFile = path.Join(path.Dir(file), layoutName+suffix)
	layout, err = fs.ReadFile(fsys, layoutFile)
	if errors.Is(err, fs.ErrNotExist) {
		return body, nil, "", nil
	}
	return body, layout, layoutFile, err
}

// tmpl is what html/template's and text/template's Template share.
type tmpl[T any] interface {
	New(name string) T
	Parse(text string) (T, error)
	Option(opt ...string) T
}

// parse parses file, named after itself so errors name it, under its
// folder's layout with suffix if there is one: the layout renders it as
// {{template "content" .}}. newRoot is htmltemplate.New or
// texttemplate.New.
func parse[T tmpl[T]](newRoot func(string) T, fsys fs.FS, file, suffix string) (T, error) {
	body, layout, layoutFile, err := source(fsys, file, suffix)
	if err != nil {
		var zero T
		return zero, err
	}
	if layout == nil {
		return newRoot(file).Option("missingkey=error").Parse(string(body))
	}
	t, err := newRoot(layoutFile).Option("missingkey=error").Parse(string(layout))
	if err == nil {
		_, err = t.New(file).Parse(string(body))
	}
	if err == nil {
		_, err = t.New("content").Parse(`{{template ` + strconv.Quote(file) + ` .}}`)
	}
	return t, err
}

// render renders the templates name with data into a text and an HTML
// body ("" for a part without a template).
func (ts *templates) render(name string, data any) (text, html string, err error) {
	h, hasHTML := ts.html[name]
	t, hasText := ts.text[name]
	if !hasHTML && !hasText {
		return "", "", ts.unknown(name)
	}
	var buf bytes.Buffer
	if hasHTML {
		if err := h.Execute(&buf, data); err != nil {
			return "", "", renderError{fmt.Errorf("mail: render %s: %w", name+htmlSuffix, err)}
		}
		html = buf.String()
		buf.Reset()
	}
	if hasText {
		if err := t.Execute(&buf, data); err != nil {
			return "", "", renderError{fmt.Errorf("mail: render %s: %w", name+textSuffix, err)}
		}
		text = buf.String()
	}
	return text, html, nil
}

// unknown is the error for a template name that none has.
func (ts *templates) unknown(name string) error {
	var names []string
	for n := range ts.html {
		names = append(names, n)
	}
	for n := range ts.text {
		if _, ok := ts.html[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	switch near, ok := config.Nearest(name, names); {
	case len(names) == 0:
		return fmt.Errorf("mail: template %q: %w; no templates were given: add mail.Templates(fsys) with %s%s or %s%s", name, ErrNoTemplate, name, htmlSuffix, name, textSuffix)
	case ok:
		return fmt.Errorf("mail: template %q: %w; did you mean %s?", name, ErrNoTemplate, near)
	default:
		return fmt.Errorf("mail: template %q: %w; there are %s", name, ErrNoTemplate, strings.Join(names, ", "))
	}
}
