package abuse

import (
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// frame encodes req at version as one request frame with correlation id
// corr.
func frame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	return kafkawire.AppendRequest(nil, req, corr, "abuse")
}

// dial connects to addr; a receive buffer above 0 is set before connecting,
// so that the window the agent sees is that small.
func dial(addr string, receiveBuffer int) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if receiveBuffer > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, receiveBuffer)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	var c net.Conn
	var err error
	// Thousands of dials at once can overflow the listen backlog; a few
	// retries ride that out.
	for attempt := 0; attempt < 5; attempt++ {
		if c, err = d.Dial("tcp", addr); err == nil {
			return c, nil
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	return nil, err
}
