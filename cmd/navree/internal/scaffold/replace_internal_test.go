//go:build unix

package scaffold

import "testing"

// TestReplacePath: a new app names the framework's clone by a path
// relative to itself when the two share a top folder, so that the pair
// can move together, else by its absolute path; a path go.mod cannot
// hold bare is quoted.
func TestReplacePath(t *testing.T) {
	for _, tt := range []struct{ app, clone, want string }{
		{"/home/ada/crm", "/home/ada/navree", "../navree"},
		{"/tmp/TestX/001/crm", "/tmp/navree", "../../../navree"},
		{"/home/ada/navree/examples/crm", "/home/ada/navree", "../.."},
		{"/home/ada/crm", "/home/ada/crm/navree", "./navree"},
		{"/tmp/crm", "/work/navree", "/work/navree"},
		{"/home/ada/my apps/crm", "/home/ada/navree", "../../navree"},
		{"/home/ada/crm", "/home/ada/my navree", `"../my navree"`},
	} {
		if got, err := replacePath(tt.app, tt.clone); err != nil || got != tt.want {
			t.Errorf("replacePath(%s, %s) = %s, %v; want %s", tt.app, tt.clone, got, err, tt.want)
		}
	}
}
