package abuse

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame encodes req at version as one request frame with correlation id
// corr: size, header (v1, or v2 with an empty tag section for flexible
// versions), body.
func frame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	clientID := "abuse"
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readFrame reads one response frame and returns its body after the size.
func readFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(c, body)
	return body, err
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
