//go:build !linux

package command

import "runtime"

func osName() string           { return runtime.GOOS + " " + runtime.GOARCH }
func multiplexingAPI() string  { return "kqueue" }
func residentBytes() int64     { return 0 }
func totalSystemMemory() int64 { return 0 }
