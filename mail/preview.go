package mail

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"go.uber.org/fx"
)

// Preview is a mail to look at while writing it: mail:preview NAME prints
// it, and serve shows it in development under /mail/previews/NAME. Func
// builds it with sample data, as a test would.
type Preview struct {
	Name string // such as "export-ready"
	Func func(ctx context.Context) (Mail, error)
}

// Previews registers previews.
//
//	mail.Previews(mail.Preview{Name: "export-ready", Func: func(context.Context) (mail.Mail, error) {
//		return mail.Template("ada@example.com", "Your export is ready", "mail/export-ready").
//			With(map[string]any{"URL": "https://crm.example.com/exports/42.csv"}), nil
//	}})
func Previews(previews ...Preview) fx.Option {
	opts := make([]fx.Option, len(previews))
	for i, p := range previews {
		opts[i] = fx.Supply(fx.Annotated{Group: "mail.previews", Target: p})
	}
	return fx.Options(opts...)
}

// previewed is a preview resolved and rendered.
type previewed struct {
	Name string
	Message
	*rendered
}

// preview builds and renders the preview name.
func (m *Mailer) preview(ctx context.Context, name string) (*previewed, error) {
	pv, ok := m.previews[name]
	if !ok {
		names := m.previewNames()
		switch near, close := config.Nearest(name, names); {
		case len(names) == 0:
			return nil, fmt.Errorf("mail: no preview %q: the app registers none (mail.Previews)", name)
		case close:
			return nil, fmt.Errorf("mail: no preview %q; did you mean %s?", name, near)
		default:
			return nil, fmt.Errorf("mail: no preview %q; there are %s", name, strings.Join(names, ", "))
		}
	}
	mail, err := pv.Func(ctx)
	if err != nil {
		return nil, fmt.Errorf("mail: preview %s: %w", name, err)
	}
	if mail == nil {
		return nil, fmt.Errorf("mail: preview %s returned no mail", name)
	}
	msg, r, err := m.s.render(mail)
	if err != nil {
		return nil, fmt.Errorf("mail: preview %s: %w", name, err)
	}
	if msg.From == "" { // as the user would write it, not as a header quotes it
		msg.From = m.s.from.Address
		if m.s.from.Name != "" {
			msg.From = m.s.from.Name + " <" + m.s.from.Address + ">"
		}
	}
	return &previewed{Name: name, Message: msg, rendered: r}, nil
}

func (m *Mailer) previewNames() []string {
	names := make([]string, 0, len(m.previews))
	for name := range m.previews {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// writeText prints p for a terminal: its headers, attachments, text and
// HTML.
func (p *previewed) writeText(w io.Writer) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-12s%s\n", k+":", v)
		}
	}
	line("From", p.From)
	line("Reply-To", p.ReplyTo)
	line("To", strings.Join(p.To, ", "))
	line("Cc", strings.Join(p.Cc, ", "))
	line("Bcc", strings.Join(p.Bcc, ", "))
	line("Subject", p.Subject)
	line("Message-ID", p.MessageID)
	for _, a := range p.Attachments {
		kind := "attachment"
		if a.Inline {
			kind = "inline"
		}
		line("Attachment", fmt.Sprintf("%s (%s, %d bytes, %s)", a.Name, contentType(a), len(a.Data), kind))
	}
	if p.Text != "" {
		fmt.Fprintf(w, "\n--- text ---\n%s\n", strings.TrimRight(p.Text, "\n"))
	}
	if p.HTML != "" {
		fmt.Fprintf(w, "\n--- html ---\n%s\n", strings.TrimRight(p.HTML, "\n"))
	}
}

type previewRoutesIn struct {
	fx.In
	Mailer *Mailer
	Config *config.Config `optional:"true"`
}

// previewRoutes are the pages of the previews, served in development
// only: with no APP_ENV, or APP_ENV=development.
func previewRoutes(p previewRoutesIn) []app.Route {
	if p.Config != nil && p.Config.Env() != "" && p.Config.Env() != "development" {
		return nil
	}
	return p.Mailer.PreviewRoutes()
}

// PreviewRoutes returns the pages of the mailer's previews: a list at
// GET /mail/previews, each preview at /mail/previews/NAME with its HTML
// body at …/NAME/html and its message as an .eml file at …/NAME/eml.
// [Module] serves them in development.
func (m *Mailer) PreviewRoutes() []app.Route {
	return []app.Route{
		{Pattern: "GET /mail/previews", Handler: http.HandlerFunc(m.servePreviewList)},
		{Pattern: "GET /mail/previews/{name}", Handler: m.previewHandler(func(w http.ResponseWriter, p *previewed) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if err := previewPage.Execute(w, p); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})},
		{Pattern: "GET /mail/previews/{name}/html", Handler: m.previewHandler(func(w http.ResponseWriter, p *previewed) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "sandbox") // the mail's HTML runs no script
			io.WriteString(w, p.HTML)
		})},
		{Pattern: "GET /mail/previews/{name}/eml", Handler: m.previewHandler(func(w http.ResponseWriter, p *previewed) {
			w.Header().Set("Content-Type", "message/rfc822")
			w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": p.Name + ".eml"}))
			w.Write(p.Raw)
		})},
	}
}

func (m *Mailer) servePreviewList(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := previewList.Execute(w, m.previewNames()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (m *Mailer) previewHandler(write func(http.ResponseWriter, *previewed)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if _, ok := m.previews[name]; !ok {
			http.Error(w, fmt.Sprintf("no mail preview %q (GET /mail/previews lists them)", name), http.StatusNotFound)
			return
		}
		p, err := m.preview(r.Context(), name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		write(w, p)
	})
}

var previewList = template.Must(template.New("list").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mail previews</title></head>
<body><h1>Mail previews</h1>
{{if .}}<ul>{{range .}}<li><a href="/mail/previews/{{.}}">{{.}}</a></li>{{end}}</ul>
{{else}}<p>No previews: register some with mail.Previews.</p>{{end}}
</body></html>
`))

var previewPage = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Subject}} · mail preview {{.Name}}</title>
<style>body{font-family:sans-serif;margin:1rem 2rem}th{text-align:left;padding-right:1rem}iframe{width:100%;height:32rem;border:1px solid #ccc}pre{background:#f6f6f6;padding:1rem;white-space:pre-wrap}</style>
</head><body>
<p><a href="/mail/previews">All previews</a> · <a href="/mail/previews/{{.Name}}/eml">Download .eml</a></p>
<table>
<tr><th>From</th><td>{{.From}}</td></tr>
{{with .ReplyTo}}<tr><th>Reply-To</th><td>{{.}}</td></tr>{{end}}
<tr><th>To</th><td>{{range $i, $a := .To}}{{if $i}}, {{end}}{{$a}}{{end}}</td></tr>
{{with .Cc}}<tr><th>Cc</th><td>{{range $i, $a := .}}{{if $i}}, {{end}}{{$a}}{{end}}</td></tr>{{end}}
{{with .Bcc}}<tr><th>Bcc</th><td>{{range $i, $a := .}}{{if $i}}, {{end}}{{$a}}{{end}}</td></tr>{{end}}
<tr><th>Subject</th><td id="subject">{{.Subject}}</td></tr>
{{range .Attachments}}<tr><th>Attachment</th><td>{{.Name}}{{if .Inline}} (inline){{end}}</td></tr>{{end}}
</table>
{{if .HTML}}<h2>HTML</h2><iframe id="html" title="HTML body" sandbox src="/mail/previews/{{.Name}}/html"></iframe>{{end}}
{{if .Text}}<h2>Text</h2><pre id="text">{{.Text}}</pre>{{end}}
</body></html>
`))
