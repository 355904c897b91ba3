package term

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// redrawEvery is how often, at most, a Progress draws its line again.
const redrawEvery = 100 * time.Millisecond

// Progress is the status line of a long command: "what: done/total
// (percent)", or what [Progress.Show] says, redrawn in place on a terminal
// at most ten times a second. Off a terminal it draws nothing: the command
// prints its outcome as plain lines. Its methods may be called from
// several goroutines.
type Progress struct {
	mu     sync.Mutex
	w      *Writer
	what   string
	total  int
	drawn  time.Time
	ending bool
}

// NewProgress returns the progress of what, out of total (0 when it is
// not known), drawn on w: a [Writer] keeps it below what else is written
// to it; any other terminal gets it drawn directly.
func NewProgress(w io.Writer, what string, total int) *Progress {
	tw, ok := w.(*Writer)
	if !ok {
		tw = NewWriter(w)
	}
	return &Progress{w: tw, what: what, total: total}
}

// Set shows that done of the total are done.
func (p *Progress) Set(done int) {
	if !p.w.terminal {
		return
	}
	line := fmt.Sprintf("%s: %d", p.what, done)
	if p.total > 0 {
		line = fmt.Sprintf("%s: %d/%d (%d%%)", p.what, done, p.total, done*100/p.total)
	}
	p.show(line, done == p.total)
}

// Show shows line as the status, "what: line".
func (p *Progress) Show(line string) {
	if p.w.terminal {
		p.show(p.what+": "+line, false)
	}
}

func (p *Progress) show(line string, now bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ending || !now && time.Since(p.drawn) < redrawEvery {
		return
	}
	p.drawn = time.Now()
	p.w.setStatus(line)
}

// Done clears the status line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ending = true
	p.w.setStatus("")
}
