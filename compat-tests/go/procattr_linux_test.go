package gocompat

import "syscall"

// childAttrs makes the kernel SIGKILL ferrocket if the test binary dies without stopping it
// (e.g. `go test -timeout` expiring), so no broker outlives the suite.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
