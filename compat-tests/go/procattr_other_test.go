//go:build !linux

package gocompat

import "syscall"

func childAttrs() *syscall.SysProcAttr { return nil }
