package shutdown

import (
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
)

// dbusLogind is logind on the system bus.
type dbusLogind struct {
	conn *dbus.Conn
}

// ConnectDBus reaches systemd-logind on the system D-Bus.
func ConnectDBus() (Logind, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("connecting to the system D-Bus: %w", err)
	}
	l := &dbusLogind{conn: conn}
	if _, err := l.InhibitDelayMax(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("systemd-logind does not answer on the system D-Bus: %w", err)
	}
	return l, nil
}

func (l *dbusLogind) InhibitDelayMax() (time.Duration, error) {
	v, err := l.conn.Object(logindService, logindObject).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, err
	}
	us, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("InhibitDelayMaxUSec is a %T", v.Value())
	}
	return time.Duration(us) * time.Microsecond, nil
}

func (l *dbusLogind) Inhibit(why string) (func(), error) {
	var fd dbus.UnixFD
	call := l.conn.Object(logindService, logindObject).Call(logindInterface+".Inhibit", 0, "shutdown", "kubelet", why, "delay")
	if err := call.Store(&fd); err != nil {
		return nil, fmt.Errorf("taking a delay inhibitor lock: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inhibit")
	return func() { f.Close() }, nil
}

func (l *dbusLogind) PrepareForShutdown() (<-chan bool, error) {
	if err := l.conn.AddMatchSignal(dbus.WithMatchObjectPath(logindObject), dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown")); err != nil {
		return nil, err
	}
	in := make(chan *dbus.Signal, 4)
	l.conn.Signal(in)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for s := range in {
			if s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) != 1 {
				continue
			}
			if v, ok := s.Body[0].(bool); ok {
				out <- v
			}
		}
	}()
	return out, nil
}
