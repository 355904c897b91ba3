//go:build !linux

package termtest

import (
	"errors"
	"os"
)

// openPTY opens pseudo-terminals on Linux only.
func openPTY() (master, tty *os.File, err error) {
	return nil, nil, errors.New("termtest opens pseudo-terminals on Linux only")
}
