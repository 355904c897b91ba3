package scaffold

import "strings"

// CommandsOf is the list of commands in help, an app's --help (as
// app.App prints it): the lines of its COMMANDS section, grouped and
// indented as they are, without the help command, which navree has too;
// "" when help has no such section.
func CommandsOf(help string) string {
	_, rest, ok := strings.Cut("\n"+help, "\nCOMMANDS:\n")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(rest, "\n\n")
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSuffix(section, "\n"), "\n") {
		if name := strings.Fields(line); len(name) == 0 || name[0] == "help," {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
