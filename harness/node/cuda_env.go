package node

import (
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// connectionsVar is the CUDA driver's count of hardware work queues a
// context sets up (8 unless set). gdrcheck's own contexts run no kernels
// and use no streams of their own, and one queue halves a context's cost:
// on an H200 (driver 580) cuDevicePrimaryCtxRetain took 0.10-0.12 s with
// the default and 0.05-0.06 s with 1, and its release 0.06 s and 0.025 s.
const connectionsVar = "CUDA_DEVICE_MAX_CONNECTIONS"

// ownConnections is set once gdrcheck has set connectionsVar for itself.
var ownConnections atomic.Bool

// limitConnections sets connectionsVar to 1 for this process's contexts,
// unless the user set it (theirs is kept). It is called before any
// goroutine of the run reads the environment: C's setenv is not safe
// beside a getenv in another thread, which NVML and libcuda make. It is
// never unset for the same reason; the children gdrcheck starts are given
// an environment without it (ChildEnv).
func limitConnections() {
	if _, set := os.LookupEnv(connectionsVar); set || ownConnections.Load() {
		return
	}
	if os.Setenv(connectionsVar, "1") == nil {
		ownConnections.Store(true)
	}
}

// ChildEnv is env (os.Environ() of this process) less what gdrcheck set
// for its own CUDA contexts: a benchmark must run as the user's jobs do,
// with the CUDA defaults, not gdrcheck's.
func ChildEnv(env []string) []string {
	if !ownConnections.Load() {
		return env
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, connectionsVar+"=")
	})
}
