package mail

// Mail is what [Mailer.Send] and [Mailer.Queue] take: a [Message], or a
// template mail made by [Template].
type Mail interface {
	// message resolves the mail into a Message, rendering its templates.
	message(*templates) (Message, error)
}

// Message is an email. Addresses are written as net/mail parses them:
// "ada@example.com" or "Ada Lovelace <ada@example.com>".
type Message struct {
	// From is the sender; empty for the [mail] from of the configuration.
	From string
	// ReplyTo is where replies go; empty for From.
	ReplyTo string
	// To, Cc and Bcc are the recipients: at least one in all. Bcc
	// recipients receive the message without appearing in it.
	To, Cc, Bcc []string
	// Subject is the subject line; required.
	Subject string
	// Text is the plain-text body and HTML the HTML one: at least one.
	// With both, the message carries both and mail clients choose.
	Text, HTML string
	// Headers are extra headers, such as "List-Unsubscribe" or
	// "X-Entity-Ref-ID". The headers the fields above write, and the
	// MIME ones, cannot be set here.
	Headers map[string]string
	// Attachments are files sent with the message.
	Attachments []Attachment
}

// Attachment is a file sent with a message.
type Attachment struct {
	// Name is the file's name as the recipient sees it, such as
	// "contacts.csv"; required.
	Name string
	// ContentType is its media type, such as "text/csv"; empty to guess
	// it from Name's extension (application/octet-stream when unknown).
	ContentType string
	// Data is the file's content.
	Data []byte
	// Inline shows the file in the HTML body instead of as an attachment:
	// the HTML refers to it as cid:Name, as in <img src="cid:logo.png">.
	Inline bool
}

func (m Message) message(*templates) (Message, error) { return m, nil }

// TemplateMessage is a message whose bodies are rendered from templates:
// see [Template]. Its Message's fields (Cc, Attachments, Headers…) apply
// as they do to any message; its Text and HTML are the templates'.
type TemplateMessage struct {
	Message
	// Name is the templates' name, such as "mail/export-ready".
	Name string
	// Data is what the templates render, given by With.
	Data any
}

// Template returns the message to to with subject whose bodies are the
// templates name: name.html.tmpl (html/template) for the HTML body and
// name.txt.tmpl (text/template) for the text one, at least one of them,
// from the file systems given to [Templates]. A file layout.html.tmpl or
// layout.txt.tmpl in the templates' folder is their layout: it renders
// the template's body with {{template "content" .}}.
//
//	mail.Template(job.RequestedBy, "Your export is ready", "mail/export-ready").
//		With(map[string]any{"URL": url})
//
// A key the data lacks is an error, not an empty string.
func Template(to, subject, name string) *TemplateMessage {
	return &TemplateMessage{Message: Message{To: []string{to}, Subject: subject}, Name: name}
}

// With sets the data the templates render and returns t.
func (t *TemplateMessage) With(data any) *TemplateMessage {
	t.Data = data
	return t
}

func (t *TemplateMessage) message(ts *templates) (Message, error) {
	msg := t.Message
	var err error
	msg.Text, msg.HTML, err = ts.render(t.Name, t.Data)
	return msg, err
}
