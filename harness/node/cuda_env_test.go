package node

import (
	"os"
	"slices"
	"testing"
)

// gdrcheck's own contexts get one work queue, its children the user's
// environment as it was; a value the user set is theirs, kept for both.
func TestConnectionsLimitIsGdrchecksOwnAndNeverAChilds(t *testing.T) {
	t.Setenv(connectionsVar, "") // restored after the test
	os.Unsetenv(connectionsVar)
	ownConnections.Store(false)
	t.Cleanup(func() { ownConnections.Store(false) })

	limitConnections()
	if v, ok := os.LookupEnv(connectionsVar); !ok || v != "1" {
		t.Fatalf("%s = %q (set %v), want 1 for gdrcheck's contexts", connectionsVar, v, ok)
	}
	env := ChildEnv(append(os.Environ(), "OTHER=1"))
	if slices.ContainsFunc(env, func(kv string) bool { return kv == connectionsVar+"=1" }) || !slices.Contains(env, "OTHER=1") {
		t.Errorf("a child's environment %v: want it without %s and with the rest", env, connectionsVar)
	}

	// The user's own value: left alone, and passed on.
	ownConnections.Store(false)
	t.Setenv(connectionsVar, "4")
	limitConnections()
	if v := os.Getenv(connectionsVar); v != "4" {
		t.Errorf("the user's %s=4 became %q", connectionsVar, v)
	}
	if env := ChildEnv(os.Environ()); !slices.Contains(env, connectionsVar+"=4") {
		t.Errorf("the user's %s=4 was taken from a child", connectionsVar)
	}
}
