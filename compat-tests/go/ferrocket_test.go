package gocompat

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	readyTimeout = 20 * time.Second
	// stopGrace is how long the process gets after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
)

// errorLine matches a tracing line logged at ERROR level: "<timestamp> ERROR <target or span>: ...".
// Anchored on the timestamp so a message that merely mentions "ERROR" does not count.
var errorLine = regexp.MustCompile(`^\S+\s+ERROR\s`)

// ferrocket is the `ferrocket standalone` child process the whole suite shares: a NameServer and a
// broker registered with it, both on loopback ports below the ephemeral range.
type ferrocket struct {
	dir         string
	log         string
	namesrvPort int
	brokerPort  int
	grpcPort    int      // grpcListenPort when extra set it, else 0
	args        []string // the command line, for killAndRestart
	cmd         *exec.Cmd
	exited      chan struct{} // closed when the process has exited; cmd.ProcessState is then set
	waitErr     error
}

func (f *ferrocket) namesrvAddr() string { return "127.0.0.1:" + strconv.Itoa(f.namesrvPort) }
func (f *ferrocket) brokerAddr() string  { return "127.0.0.1:" + strconv.Itoa(f.brokerPort) }

// startFerrocket writes namesrv.conf and broker.conf (the suite's keys, then extra) into dir,
// starts `bin standalone` with its output in dir/ferrocket.log and waits until both ports accept
// connections.
func startFerrocket(bin, dir string, extra ...[2]string) (*ferrocket, error) {
	namesrvPort, brokerPort, err := freePorts()
	if err != nil {
		return nil, err
	}
	f := &ferrocket{
		dir:         dir,
		log:         filepath.Join(dir, "ferrocket.log"),
		namesrvPort: namesrvPort,
		brokerPort:  brokerPort,
	}
	namesrvConf, err := writeConf(filepath.Join(dir, "namesrv.conf"), [][2]string{
		{"listenPort", strconv.Itoa(namesrvPort)},
		{"kvConfigPath", filepath.Join(dir, "namesrv", "kvConfig.json")},
		{"configStorePath", filepath.Join(dir, "namesrv", "namesrv.properties")},
	})
	if err != nil {
		return nil, err
	}
	brokerConf, err := writeConf(filepath.Join(dir, "broker.conf"), append([][2]string{
		{"brokerClusterName", "GoCompatCluster"},
		{"brokerName", "go-compat-broker"},
		{"brokerId", "0"},
		{"brokerIP1", "127.0.0.1"},
		{"listenPort", strconv.Itoa(brokerPort)},
		{"storePathRootDir", filepath.Join(dir, "store")},
		{"mappedFileSizeCommitLog", strconv.Itoa(16 * 1024 * 1024)},
		// The machine's disk must not decide: above 85 % (diskSpaceCleanForciblyRatio) a broker
		// deletes CommitLog segments not yet consumed.
		{"cleanFileForciblyEnable", "false"},
		{"flushDiskType", "ASYNC_FLUSH"},
		{"autoCreateTopicEnable", "true"},
		{"autoCreateSubscriptionGroup", "true"},
		{"enablePropertyFilter", "true"},
		// The Go client's trace dispatcher sends only to an existing trace topic (TestMessageTrace).
		{"traceTopicEnable", "true"},
		// Transaction checks every second, for transactions unanswered for a second.
		{"transactionCheckInterval", "1000"},
		{"transactionTimeOut", "1000"},
	}, extra...))
	if err != nil {
		return nil, err
	}
	for _, e := range extra {
		if e[0] == "grpcListenPort" {
			f.grpcPort, _ = strconv.Atoi(e[1])
		}
	}
	f.args = []string{bin, "standalone", "-c", brokerConf, "--namesrv-config", namesrvConf}
	if err := f.launch(); err != nil {
		return nil, err
	}
	return f, nil
}

// launch starts the process with f.args (output appended to f.log) and waits until every port
// it listens on (NameServer, broker, gRPC if any) accepts connections.
func (f *ferrocket) launch() error {
	logFile, err := os.OpenFile(f.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	f.exited = make(chan struct{})
	f.waitErr = nil
	f.cmd = exec.Command(f.args[0], f.args[1:]...)
	f.cmd.Dir = f.dir
	f.cmd.Stdout = logFile
	f.cmd.Stderr = logFile
	f.cmd.SysProcAttr = childAttrs()
	fmt.Fprintf(logFile, "==== [go compat] %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(f.cmd.Args, " "))
	if err := f.cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", f.args[0], err)
	}
	cmd, exited := f.cmd, f.exited
	go func() {
		f.waitErr = cmd.Wait()
		close(exited)
	}()
	for _, port := range []int{f.namesrvPort, f.brokerPort, f.grpcPort} {
		if port == 0 {
			continue
		}
		if err := f.awaitPort(port, readyTimeout); err != nil {
			f.stop()
			return err
		}
	}
	return nil
}

// killAndRestart is a crash: SIGKILL, then the same command on the same store and ports; returns
// once every port listens again.
func (f *ferrocket) killAndRestart() error {
	if err := f.running(); err != nil {
		return err
	}
	if err := f.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	<-f.exited
	return f.launch()
}

// awaitPort polls 127.0.0.1:port until it accepts a connection; fails at once if the process exits.
func (f *ferrocket) awaitPort(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-f.exited:
			return fmt.Errorf("ferrocket exited (%v) before listening on port %d\n%s", f.waitErr, port, f.logTail(0, 60))
		default:
		}
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ferrocket did not accept connections on port %d within %v\n%s", port, timeout, f.logTail(0, 60))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// running reports an error when the process has exited.
func (f *ferrocket) running() error {
	select {
	case <-f.exited:
		return fmt.Errorf("ferrocket has exited (%v)", f.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits stopGrace for the process to exit, then SIGKILLs it. It returns an
// error unless the process exited by itself with status 0.
func (f *ferrocket) stop() error {
	if f.cmd == nil || f.cmd.Process == nil {
		return nil
	}
	select {
	case <-f.exited:
		return fmt.Errorf("ferrocket had already exited: %v", f.waitErr)
	default:
	}
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-f.exited:
		if f.waitErr != nil {
			return fmt.Errorf("ferrocket exited after SIGTERM with %v", f.waitErr)
		}
		return nil
	case <-time.After(stopGrace):
	}
	_ = f.cmd.Process.Kill()
	<-f.exited
	return fmt.Errorf("ferrocket did not exit within %v of SIGTERM and was killed", stopGrace)
}

// logSize is the current length of the log; logTail(from, n) shows what was written after it.
func (f *ferrocket) logSize() int64 {
	info, err := os.Stat(f.log)
	if err != nil {
		return 0
	}
	return info.Size()
}

// logTail returns the last n lines written to the log at or after byte offset from, framed.
func (f *ferrocket) logTail(from int64, n int) string {
	lines, err := readLines(f.log, from)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", f.log, err)
	}
	shown := lines
	if len(shown) > n {
		shown = shown[len(shown)-n:]
	}
	return fmt.Sprintf("---- last %d of %d lines of %s ----\n%s\n---- end of ferrocket log ----",
		len(shown), len(lines), f.log, strings.Join(shown, "\n"))
}

// errorLines returns every line the process logged at ERROR level.
func (f *ferrocket) errorLines() ([]string, error) {
	lines, err := readLines(f.log, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lines {
		if errorLine.MatchString(l) {
			out = append(out, l)
		}
	}
	return out, nil
}

func readLines(path string, from int64) ([]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := file.Seek(from, 0); err != nil {
		return nil, err
	}
	var lines []string
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	return lines, scanner.Err()
}

// writeConf writes key=value lines (the Java properties files ferrocket reads) and returns path.
func writeConf(path string, entries [][2]string) (string, error) {
	var b strings.Builder
	b.WriteString("# written by the Go compat suite\n")
	for _, e := range entries {
		b.WriteString(e[0] + "=" + e[1] + "\n")
	}
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// freePorts picks a NameServer port and a broker port p such that p-2 (the broker's VIP port),
// p and p+1 (its HA port) are free. All are taken below Linux's ephemeral range (32768..60999), so
// no outgoing connection can occupy them between this check and ferrocket's bind.
// pickPort is a random port in 10002..32000 that passes ok, or 0.
func pickPort(ok func(int) bool) int {
	for attempt := 0; attempt < 500; attempt++ {
		p := 10002 + portRand.Intn(32000-10002)
		if ok(p) {
			return p
		}
	}
	return 0
}

var portRand = rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())))

func freePorts() (namesrv, broker int, err error) {
	namesrv = pickPort(portFree)
	if namesrv == 0 {
		return 0, 0, errors.New("found no free port in 10002..32000")
	}
	broker = pickPort(func(p int) bool {
		if p-2 <= namesrv && namesrv <= p+1 {
			return false
		}
		return portFree(p-2) && portFree(p) && portFree(p+1)
	})
	if broker == 0 {
		return 0, 0, errors.New("found no free port triple (p-2, p, p+1) in 10002..32000")
	}
	return namesrv, broker, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "0.0.0.0:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// TestErrorLinePattern pins the tracing line format the end-of-suite ERROR check relies on.
func TestErrorLinePattern(t *testing.T) {
	for line, want := range map[string]bool{
		`2026-12-01T15:59:18.496266Z ERROR conn{id=22 peer=127.0.0.1:47974}: ferrocket::broker: cannot persist topics.json`: true,
		`2026-12-01T15:59:18.496266Z ERROR ferrocket::store::dispatch: dispatch failed`:                                     true,
		`2026-12-01T15:59:18.496266Z  WARN ferrocket::remoting::connection: peer sent ERROR frames`:                         false,
		`2026-12-01T15:59:18.496266Z  INFO ferrocket::broker: ERROR in a message`:                                           false,
		`==== [go compat] 2026-12-01T15:59:18Z: ferrocket standalone`:                                                       false,
	} {
		if got := errorLine.MatchString(line); got != want {
			t.Errorf("errorLine.MatchString(%q) = %v, want %v", line, got, want)
		}
	}
}
