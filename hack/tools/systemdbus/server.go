package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/godbus/dbus/v5"
)

// server speaks the D-Bus wire protocol to the clients of systemd's private
// socket (/run/systemd/private): peer-to-peer, without a bus, as systemd
// itself does. Each connection authenticates with EXTERNAL as the user
// this process runs as, then sends method calls; JobRemoved goes to every
// connection.
type server struct {
	m    *manager
	logf func(format string, args ...any)
	guid string

	mu    sync.Mutex
	conns map[*peer]struct{}
}

// peer is one client connection.
type peer struct {
	c      net.Conn
	wmu    sync.Mutex // one message at a time
	serial uint32
}

func newServer(u Unit, logf func(string, ...any)) *server {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s := &server{logf: logf, guid: hex.EncodeToString(b), conns: map[*peer]struct{}{}}
	s.m = &manager{unit: u, logf: logf, emit: s.jobRemoved}
	return s
}

// serve accepts connections until l is closed.
func (s *server) serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go s.handle(c)
	}
}

func (s *server) handle(c net.Conn) {
	defer c.Close()
	in := bufio.NewReader(c)
	if err := s.auth(c, in); err != nil {
		s.logf("connection refused: %v", err)
		return
	}
	p := &peer{c: c}
	s.mu.Lock()
	s.conns[p] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, p)
		s.mu.Unlock()
	}()
	for {
		msg, err := dbus.DecodeMessage(in)
		if err != nil {
			// A client that closes its connection ends it (go-systemd's
			// Close resets it), not an error.
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
				s.logf("reading a message: %v", err)
			}
			return
		}
		if msg.Type != dbus.TypeMethodCall {
			continue
		}
		iface, _ := msg.Headers[dbus.FieldInterface].Value().(string)
		member, _ := msg.Headers[dbus.FieldMember].Value().(string)
		body, errName, errMsg, after := s.m.call(iface, member, msg.Body)
		if msg.Flags&dbus.FlagNoReplyExpected == 0 {
			var reply *dbus.Message
			if errName != "" {
				reply = &dbus.Message{Type: dbus.TypeError, Headers: map[dbus.HeaderField]dbus.Variant{
					dbus.FieldErrorName: dbus.MakeVariant(errName),
				}, Body: []any{errMsg}}
			} else {
				reply = &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{}, Body: body}
			}
			reply.Headers[dbus.FieldReplySerial] = dbus.MakeVariant(msg.Serial())
			if err := p.send(reply); err != nil {
				s.logf("replying to %s.%s: %v", iface, member, err)
				return
			}
		}
		if after != nil {
			after()
		}
	}
}

// auth runs the server's side of the D-Bus authentication protocol for
// EXTERNAL: the peer's credentials from the socket must be this process's
// user (the harness runs as root, as systemd does).
func (s *server) auth(c net.Conn, in *bufio.Reader) error {
	if b, err := in.ReadByte(); err != nil || b != 0 {
		return fmt.Errorf("no leading NUL byte (%v)", err)
	}
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	write := func(line string) error {
		_, err := io.WriteString(c, line+"\r\n")
		return err
	}
	accept := func(data string) error {
		if data != "" {
			b, err := hex.DecodeString(data)
			if err != nil || string(b) != strconv.Itoa(uid) {
				_ = write("REJECTED EXTERNAL")
				return fmt.Errorf("EXTERNAL identity %q is not the peer's uid %d", b, uid)
			}
		}
		if uid != syscall.Getuid() {
			_ = write("REJECTED EXTERNAL")
			return fmt.Errorf("peer uid %d is not this process's uid %d", uid, syscall.Getuid())
		}
		return write("OK " + s.guid)
	}
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(strings.TrimSuffix(line, "\r\n"))
		if len(f) == 0 {
			return errors.New("empty authentication line")
		}
		switch {
		case f[0] == "AUTH" && len(f) == 2 && f[1] == "EXTERNAL":
			// No initial response: an empty challenge, as systemd sends.
			if err := write("DATA"); err != nil {
				return err
			}
		case f[0] == "AUTH" && len(f) == 3 && f[1] == "EXTERNAL":
			if err := accept(f[2]); err != nil {
				return err
			}
		case f[0] == "AUTH" || f[0] == "CANCEL":
			if err := write("REJECTED EXTERNAL"); err != nil {
				return err
			}
		case f[0] == "DATA":
			data := ""
			if len(f) > 1 {
				data = f[1]
			}
			if err := accept(data); err != nil {
				return err
			}
		case f[0] == "NEGOTIATE_UNIX_FD":
			// No message here carries file descriptors.
			if err := write("ERROR"); err != nil {
				return err
			}
		case f[0] == "BEGIN":
			return nil
		default:
			if err := write("ERROR"); err != nil {
				return err
			}
		}
	}
}

func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return int(cred.Uid), nil
}

// send writes msg with the connection's next serial and the signature of
// its body.
func (p *peer) send(msg *dbus.Message) error {
	if len(msg.Body) > 0 {
		msg.Headers[dbus.FieldSignature] = dbus.MakeVariant(dbus.SignatureOf(msg.Body...))
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.serial++
	var buf bytes.Buffer
	if err := msg.EncodeTo(&buf, binary.LittleEndian); err != nil {
		return err
	}
	// godbus leaves the serial (bytes 8-11 of the fixed header) to its
	// client connections; a server sets its own.
	b := buf.Bytes()
	binary.LittleEndian.PutUint32(b[8:12], p.serial)
	_, err := p.c.Write(b)
	return err
}

// jobRemoved sends systemd's JobRemoved signal to every connection.
func (s *server) jobRemoved(j jobResult) {
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.conns))
	for p := range s.conns {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	for _, p := range peers {
		sig := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldPath:      dbus.MakeVariant(managerPath),
			dbus.FieldInterface: dbus.MakeVariant(managerIface),
			dbus.FieldMember:    dbus.MakeVariant("JobRemoved"),
		}, Body: []any{j.id, j.path, j.unit, j.result}}
		if err := p.send(sig); err != nil {
			s.logf("sending JobRemoved: %v", err)
		}
	}
}
