// Command testserver is the workload of gokubelet.local/testimage: a small
// static HTTP (and optional TCP echo) server whose behaviour tests control
// through flags, URLs and flag files.
//
// HTTP endpoints:
//
//	GET /healthz       200 "ok", or 500 while --unhealthy-file exists
//	GET /readyz        200 "ok", or 503 while --unready-file exists
//	GET /status/<code> replies with that status code
//	GET /hostname      the hostname
//	GET /env           the environment, one KEY=VALUE per line, sorted
//	GET /exit/<code>   replies, then exits with that code
//
// Signals: SIGTERM/SIGINT exit 0 after --term-delay, or never with
// --ignore-term. Every request is logged as one line on stdout.
//
// Client mode: --fetch=URL makes one request instead of serving (POST with
// --post-body, a bearer token from --bearer-token-file, the server checked
// against --ca-file), writes the body to stdout or --output and exits 0 on
// a 2xx answer, 1 otherwise.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	unhealthyFile string
	unreadyFile   string
	// exit is called by /exit/<code> after the reply is written.
	exit func(code int)
	// logf receives one line per request.
	logf func(format string, args ...any)
}

func main() {
	httpPort := flag.Int("http-port", 8080, "HTTP port (0 = off)")
	tcpPort := flag.Int("tcp-port", 0, "TCP echo port (0 = off)")
	termDelay := flag.Duration("term-delay", 0, "keep running this long after SIGTERM/SIGINT, then exit 0")
	ignoreTerm := flag.Bool("ignore-term", false, "never exit on SIGTERM/SIGINT")
	unhealthy := flag.String("unhealthy-file", "/tmp/unhealthy", "/healthz fails while this file exists")
	unready := flag.String("unready-file", "/tmp/unready", "/readyz fails while this file exists")
	var fc fetchConfig
	flag.StringVar(&fc.url, "fetch", "", "client mode: request this URL, print the body, exit 0 on 2xx")
	flag.StringVar(&fc.caFile, "ca-file", "", "client mode: verify the server against this CA bundle")
	flag.StringVar(&fc.tokenFile, "bearer-token-file", "", "client mode: send the token in this file as a bearer token")
	flag.StringVar(&fc.postBody, "post-body", "", "client mode: POST this JSON body instead of a GET")
	flag.StringVar(&fc.output, "output", "", "client mode: write the body to this file instead of stdout")
	flag.DurationVar(&fc.timeout, "timeout", 10*time.Second, "client mode: request timeout")
	flag.Parse()
	if fc.url != "" {
		os.Exit(runFetch(fc))
	}

	logger := log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds)
	cfg := config{
		unhealthyFile: *unhealthy,
		unreadyFile:   *unready,
		exit:          os.Exit,
		logf:          logger.Printf,
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go handleSignals(sigs, *termDelay, *ignoreTerm, logger)

	errc := make(chan error, 2)
	if *tcpPort != 0 {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", *tcpPort))
		if err != nil {
			logger.Fatalf("tcp listen: %v", err)
		}
		logger.Printf("tcp echo listening on %s", ln.Addr())
		go func() { errc <- serveEcho(ln, logger) }()
	}
	if *httpPort != 0 {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", *httpPort))
		if err != nil {
			logger.Fatalf("http listen: %v", err)
		}
		logger.Printf("http listening on %s", ln.Addr())
		go func() { errc <- http.Serve(ln, newHandler(cfg)) }()
	}
	if *httpPort == 0 && *tcpPort == 0 {
		select {} // nothing to serve: just wait for signals
	}
	logger.Fatalf("server stopped: %v", <-errc)
}

func handleSignals(sigs <-chan os.Signal, delay time.Duration, ignore bool, logger *log.Logger) {
	var once sync.Once
	for s := range sigs {
		if ignore {
			logger.Printf("got %v, ignoring it (--ignore-term)", s)
			continue
		}
		once.Do(func() {
			logger.Printf("got %v, exiting in %v", s, delay)
			time.AfterFunc(delay, func() {
				logger.Printf("exiting 0")
				os.Exit(0)
			})
		})
	}
}

func newHandler(cfg config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		flagFileCheck(w, cfg.unhealthyFile, http.StatusInternalServerError, "unhealthy")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		flagFileCheck(w, cfg.unreadyFile, http.StatusServiceUnavailable, "not ready")
	})
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil || code < 100 || code > 999 {
			http.Error(w, "bad status code", http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "%d\n", code)
	})
	mux.HandleFunc("GET /hostname", func(w http.ResponseWriter, r *http.Request) {
		h, err := os.Hostname()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, h)
	})
	mux.HandleFunc("GET /env", func(w http.ResponseWriter, r *http.Request) {
		env := os.Environ()
		sort.Strings(env)
		io.WriteString(w, strings.Join(env, "\n")+"\n")
	})
	mux.HandleFunc("GET /exit/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil || code < 0 || code > 255 {
			http.Error(w, "bad exit code", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "exiting %d\n", code)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		cfg.logf("exiting %d on request", code)
		go func() {
			time.Sleep(50 * time.Millisecond) // let the reply reach the client
			cfg.exit(code)
		}()
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "testserver: /healthz /readyz /status/<code> /hostname /env /exit/<code>\n")
	})
	return logRequests(mux, cfg.logf)
}

// flagFileCheck replies 200 "ok" unless file exists, then bad with msg.
func flagFileCheck(w http.ResponseWriter, file string, bad int, msg string) {
	if file != "" {
		if _, err := os.Stat(file); err == nil {
			http.Error(w, msg, bad)
			return
		}
	}
	io.WriteString(w, "ok")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func logRequests(next http.Handler, logf func(string, ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		logf("%s %s %s %d %s", r.RemoteAddr, r.Method, r.URL.RequestURI(), rec.status, time.Since(start).Round(time.Microsecond))
	})
}

// serveEcho echoes every line it receives back on the same connection.
func serveEcho(ln net.Listener, logger *log.Logger) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			logger.Printf("tcp %s connected", c.RemoteAddr())
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadBytes('\n')
				if len(line) > 0 {
					if _, werr := c.Write(line); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}
