// Package gocompat drives the official Go client, github.com/apache/rocketmq-client-go/v2, against
// one `ferrocket standalone` process shared by every test of the package (see TestMain).
//
//	FERROCKET_BIN=/abs/path/to/ferrocket go test -count=1 -timeout 10m ./...
package gocompat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var (
	server *ferrocket
	// admin client shared by the tests to create their topics.
	adm admin.Admin
	// clientLog is where the Go client's own logs go.
	clientLog string
	// grpcPort is the shared broker's gRPC listener.
	grpcPort int
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	bin := os.Getenv("FERROCKET_BIN")
	if bin == "" || !filepath.IsAbs(bin) {
		fmt.Fprintf(os.Stderr, "FERROCKET_BIN must be the absolute path of a ferrocket binary "+
			"(e.g. FERROCKET_BIN=$PWD/target/release/ferrocket after `cargo build --release`); got %q\n", bin)
		return 2
	}
	if info, err := os.Stat(bin); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		fmt.Fprintf(os.Stderr, "FERROCKET_BIN=%s is not an executable file (%v)\n", bin, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "ferrocket-go-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}

	// The Go client logs every rebalance and heartbeat at info level: warnings and errors only,
	// into a file beside ferrocket's log.
	clientLog = filepath.Join(dir, "rocketmq-client-go.log")
	if os.Getenv("ROCKETMQ_GO_LOG_LEVEL") == "" {
		rlog.SetLogLevel("warn")
	}
	if err := rlog.SetOutputPath(clientLog); err != nil {
		fmt.Fprintln(os.Stderr, "cannot log the Go client to", clientLog, err)
		return 2
	}

	// The 5.x gRPC SDK's door (grpc5_test.go): grpcListenPort, TLS and plaintext on one port.
	// A PushConsumer's GracefulStop waits for its held receives: hold them 1..3 s, not 5..20 s.
	grpcPort = pickPort(portFree)
	server, err = startFerrocket(bin, dir, [2]string{"grpcListenPort", strconv.Itoa(grpcPort)},
		[2]string{"grpcClientConsumerMinLongPollingTimeoutMillis", "1000"},
		[2]string{"grpcClientConsumerMaxLongPollingTimeoutMillis", "3000"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "[go compat] ferrocket did not start:", err)
		fmt.Fprintln(os.Stderr, "[go compat] kept", dir)
		return 1
	}
	fmt.Printf("[go compat] ferrocket standalone: NameServer %s, broker %s, log %s\n",
		server.namesrvAddr(), server.brokerAddr(), server.log)
	adm, err = admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})))
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "[go compat] admin.NewAdmin:", err)
	} else {
		code = m.Run()
		adm.Close()
	}

	if err := server.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "[go compat] FAIL: "+err.Error())
		code = 1
	}
	errs, err := server.errorLines()
	if err != nil {
		fmt.Fprintln(os.Stderr, "[go compat] FAIL: cannot read the ferrocket log:", err)
		code = 1
	} else if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "[go compat] FAIL: the ferrocket log has %d ERROR line(s):\n%s\n",
			len(errs), strings.Join(errs, "\n"))
		code = 1
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, server.logTail(0, 80))
		fmt.Fprintf(os.Stderr, "[go compat] kept %s (ferrocket.log, rocketmq-client-go.log, store/)\n", dir)
		return code
	}
	os.RemoveAll(dir)
	return 0
}
