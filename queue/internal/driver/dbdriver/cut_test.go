package dbdriver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// cutter is a TCP proxy between the driver and PostgreSQL that, armed,
// cuts the first connection on which a client message its rule matches
// passes: it forwards that message and the rest of the client's
// (commit: the server carries them out) or drops it (drop: the server
// never sees it), forwards nothing more of the server's, and once the
// server has answered (ReadyForQuery) closes both sides. The client
// then reads an end of file where its answer should be.
type cutter struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	rule func(typ byte, body []byte) bool // nil: disarmed
	drop bool
	cuts chan struct{} // a value for each cut
	// hold, if not nil, keeps the client's side of a cut connection open
	// until it is closed: the server's side is closed at once.
	hold chan struct{}
	// refuse closes every new connection at once: the server is gone.
	refuse bool
}

// newCutter starts a cutter in front of the server of url and returns it
// with url pointing at it.
func newCutter(t *testing.T, rawURL string) (*cutter, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: u.Host, cuts: make(chan struct{}, 1)}
	t.Cleanup(func() { ln.Close() })
	go c.accept()
	u.Host = ln.Addr().String()
	return c, u.String()
}

// arm makes the cutter cut the next connection on which a client message
// matches rule: committed, the server carries the message out; dropped,
// it never gets it.
func (c *cutter) arm(rule func(typ byte, body []byte) bool, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rule, c.drop = rule, drop
}

// fired reports whether the cutter cut a connection since it was armed,
// and disarms it.
func (c *cutter) fired() bool {
	c.mu.Lock()
	c.rule = nil
	c.mu.Unlock()
	select {
	case <-c.cuts:
		return true
	default:
		return false
	}
}

// match reports whether a client message matches the armed rule, and
// disarms the cutter if so: one cut per arming.
func (c *cutter) match(typ byte, body []byte) (cut, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rule == nil || !c.rule(typ, body) {
		return false, false
	}
	c.rule = nil
	return true, c.drop
}

func (c *cutter) accept() {
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		refuse := c.refuse
		c.mu.Unlock()
		if refuse {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", c.target)
		if err != nil {
			client.Close()
			continue
		}
		go c.pipe(client, server)
	}
}

// pipe relays one connection, message by message.
func (c *cutter) pipe(client, server net.Conn) {
	cutting := make(chan struct{}) // closed once a client message matched
	var once sync.Once
	cut := func() { // the server's side at once, the client's when let go
		once.Do(func() {
			c.mu.Lock()
			hold := c.hold
			c.mu.Unlock()
			server.Close()
			c.cuts <- struct{}{}
			if hold != nil {
				<-hold
			}
			client.Close()
		})
	}
	end := func() {
		select {
		case <-cutting:
			cut()
		default:
			client.Close()
			server.Close()
		}
	}
	go func() {
		defer end()
		first := true // the startup message has no type byte
		for {
			typ, msg, err := readMessage(client, first)
			if err != nil {
				return
			}
			first = false
			select {
			case <-cutting: // the rest of what the client sent with it
			default:
				if matched, drop := c.match(typ, msg[1:]); matched {
					close(cutting)
					if drop {
						return
					}
				}
			}
			if _, err := server.Write(msg); err != nil {
				return
			}
		}
	}()
	defer end()
	for {
		typ, msg, err := readMessage(server, false)
		if err != nil {
			return
		}
		select {
		case <-cutting:
			if typ == 'Z' { // the server is done with what it was sent
				return
			}
			continue
		default:
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one protocol message: a type byte and a length that
// counts itself, or for the first message of a connection a length
// alone. It returns the type (0 for the first) and the message as read;
// for the first, msg[1:] is the message too (msg[0] is a 0 put before it).
func readMessage(r io.Reader, first bool) (byte, []byte, error) {
	head := make([]byte, 5)
	if first {
		if _, err := io.ReadFull(r, head[1:]); err != nil {
			return 0, nil, err
		}
	} else if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(head[1:]))
	if n < 4 || n > 1<<26 {
		return 0, nil, errors.New("bad message length")
	}
	msg := make([]byte, 5+n-4)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	if first {
		return 0, msg[1:], nil // as sent: no type byte
	}
	return head[0], msg, nil
}

// commitRule matches the COMMIT of a transaction.
func commitRule(typ byte, body []byte) bool {
	return typ == 'Q' && bytes.HasPrefix(bytes.ToLower(body[4:]), []byte("commit"))
}

// holding matches a message that carries s: a statement's parameters
// (Bind), a row of a COPY (CopyData), a simple query.
func holding(s string) func(typ byte, body []byte) bool {
	return func(typ byte, body []byte) bool {
		return (typ == 'B' || typ == 'd' || typ == 'Q') && bytes.Contains(body, []byte(s))
	}
}
