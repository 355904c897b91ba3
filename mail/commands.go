package mail

import (
	"errors"
	"fmt"
	"os"

	"github.com/navree/navree/app"
	"github.com/urfave/cli/v2"
)

func commands() []app.Command {
	return []app.Command{
		{
			Name:      "mail:test",
			Usage:     "Send a test message through the configured transport",
			ArgsUsage: "ADDRESS",
			Description: "Sends a short plain-text message to ADDRESS through [mail] transport (and its failovers)\n" +
				"and prints which transport took it: the first thing to run after setting SMTP up.",
			Action: app.Uses(func(c *cli.Context, m *Mailer) error {
				if c.NArg() != 1 {
					return errors.New("mail:test takes one argument, the address to send to, such as: mail:test you@example.com")
				}
				to := c.Args().First()
				sent, err := m.send(c.Context, Message{To: []string{to}, Subject: "Test message from " + c.App.Name,
					Text: "This is a test message from " + c.App.Name + ", sent by mail:test.\n\nIf you can read it, mail works.\n"})
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Sent a test message to %s through %s (Message-ID %s).\n", to, sent.transport, sent.messageID)
				switch sent.transport.String() {
				case Log:
					fmt.Fprintln(c.App.Writer, `The log transport delivers nothing: set [mail] transport = "smtp" and its host to send real mail.`)
				case Memory:
					fmt.Fprintln(c.App.Writer, "The memory transport keeps messages in this process only: nothing was delivered.")
				}
				return nil
			}),
		},
		{
			Name:      "mail:preview",
			Usage:     "Print a registered mail preview, or write it to an .eml file",
			ArgsUsage: "[NAME]",
			Description: "Renders the preview NAME (registered with mail.Previews) and prints its headers,\n" +
				"text and HTML, or with --eml writes the whole message to a file a mail client opens.\n" +
				"Without NAME, lists the previews.",
			Flags: []cli.Flag{&cli.StringFlag{Name: "eml", Usage: "write the message to `FILE` instead of printing it"}},
			Action: app.Uses(func(c *cli.Context, m *Mailer) error {
				w := c.App.Writer
				if c.NArg() == 0 {
					names := m.previewNames()
					if len(names) == 0 {
						fmt.Fprintln(w, "No mail previews: register some with mail.Previews.")
					}
					for _, name := range names {
						fmt.Fprintln(w, name)
					}
					return nil
				}
				if c.NArg() > 1 {
					return errors.New("mail:preview takes one preview name")
				}
				p, err := m.preview(c.Context, c.Args().First())
				if err != nil {
					return err
				}
				if file := c.String("eml"); file != "" {
					if err := os.WriteFile(file, p.Raw, 0o644); err != nil {
						return fmt.Errorf("mail:preview: %w", err)
					}
					fmt.Fprintf(w, "Wrote the preview %s to %s (%d bytes).\n", p.Name, file, len(p.Raw))
					return nil
				}
				p.writeText(w)
				return nil
			}),
		},
	}
}
