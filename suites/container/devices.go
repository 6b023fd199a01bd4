package container

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/suites"
)

// judgeDevices returns a finding for every device node under prefix that
// is missing, is not the device it names, or does not open, and notes the
// causes and the nodes whose identity could not be told.
func judgeDevices(c node.ContainerFacts, prefix, variable string) []string {
	var bad, unchecked []string
	noted := map[string]bool{}
	for _, d := range c.Devices {
		if !strings.HasPrefix(d.Path, prefix) {
			continue
		}
		finding, cause, unknown := deviceFinding(d, c.Env, variable)
		if finding != "" {
			bad = append(bad, finding)
			if !noted[cause] {
				noted[cause] = true
				suites.Note("cause: %s", cause)
			}
		}
		if unknown != "" {
			unchecked = append(unchecked, d.Path+": "+unknown)
		}
	}
	if len(unchecked) > 0 {
		suites.Note("identity not checked: %s", strings.Join(unchecked, "; "))
	}
	return bad
}

// deviceFinding says what is wrong with a device node and its likely
// cause; an empty finding means it is the device it names and opens.
// unknown, when set, says why its identity could not be told: that is
// noted, never failed.
func deviceFinding(d node.DeviceNode, env map[string]string, variable string) (finding, cause, unknown string) {
	if !d.Present {
		why := CauseNotExposed + " " + variableText(env, variable, "not mounted into this container")
		return fmt.Sprintf("%s for %s is missing: %s", d.Path, d.For, why), CauseNotExposed, ""
	}
	wrong, unknown := identity(d)
	if wrong != "" {
		return fmt.Sprintf("%s for %s %s: not %s (bind-mounted over, or a placeholder)", d.Path, d.For, wrong, d.Want.What), CauseWrong, ""
	}
	if d.Openable {
		return "", "", unknown
	}
	switch {
	case d.Denied:
		cause = CauseCgroup
	case d.NoDriver:
		return fmt.Sprintf("%s for %s cannot be opened: %s (%s: its module is not loaded in this kernel, or the device is gone)", d.Path, d.For, d.Error, CauseNoDriver), CauseNoDriver, unknown
	default:
		cause = CausePermission
	}
	return fmt.Sprintf("%s for %s cannot be opened: %s (%s)", d.Path, d.For, d.Error, cause), cause, unknown
}

// identity is the rule a device node must meet to count: a character
// device of the major its driver registered and, where the driver fixes
// it, the minor (195:N for GPU N, 195:255 for nvidiactl). wrong says what
// the node is instead ("is character device 1:3, not 195:0"); unknown says
// why that could not be told (numbers not recorded, a major not in
// proc/devices), in which case only what is known was checked.
func identity(d node.DeviceNode) (wrong, unknown string) {
	if d.Want == nil {
		return "", ""
	}
	if d.Type == "" {
		return "", "its type and device numbers were not recorded (a recording older than gdrcheck's device numbers)"
	}
	want := wantText(*d.Want)
	if d.Type != node.TypeCharDevice {
		found := "a " + d.Type
		if d.Number != nil {
			found = d.Type + " " + d.Number.String()
		}
		if want == "" {
			return "is " + found + ", not a character device", ""
		}
		return "is " + found + ", not character device " + want, ""
	}
	if d.Number == nil {
		return "", "its device numbers were not recorded"
	}
	if want == "" {
		return "", fmt.Sprintf("the major of %s is not known (%s): %s is %s %s, only its type was checked", d.Want.What, d.Want.Unknown, d.Path, d.Type, d.Number)
	}
	if !slices.Contains(d.Want.Majors, d.Number.Major) || d.Want.Minor != nil && *d.Want.Minor != d.Number.Minor {
		return "is " + d.Type + " " + d.Number.String() + ", not " + want, ""
	}
	return "", ""
}

// wantText writes the numbers a node must have, "195:0", "231:* or
// 244:*" where any minor will do, or "" where the major is not known.
func wantText(w node.DeviceID) string {
	minor := "*"
	if w.Minor != nil {
		minor = fmt.Sprint(*w.Minor)
	}
	var alts []string
	for _, m := range w.Majors {
		alts = append(alts, fmt.Sprintf("%d:%s", m, minor))
	}
	return strings.Join(alts, " or ")
}

// noGPUFinding says that the container was given no GPU, and the ways a
// runtime gives one, rather than blaming a driver the host does run.
func noGPUFinding(h node.HiddenGPUs, env map[string]string) string {
	host := fmt.Sprintf("the host has %d NVIDIA GPU(s)", h.HostGPUs)
	if h.Driver != "" {
		host += " (driver " + h.Driver + ")"
	}
	lib := "libnvidia-ml.so.1 is not reachable"
	if !h.NoLibrary {
		lib = "NVML does not answer (" + h.NVML + ")"
	}
	return fmt.Sprintf("no GPU is exposed to this container: %s but there is no /dev/nvidia* here and %s %s: the container runtime did not expose GPUs (docker/podman --gpus, NVIDIA_VISIBLE_DEVICES with the NVIDIA container runtime, CDI --device nvidia.com/gpu=all, the pyxis/enroot hooks of a job given GPUs)",
		host, lib, variableText(env, "NVIDIA_VISIBLE_DEVICES", "yet none was mounted in"))
}

// variableText says what the variable a runtime exposes devices by asks
// for, with set saying what follows from a value that asks for some.
func variableText(env map[string]string, variable, set string) string {
	switch v, ok := env[variable]; {
	case !ok:
		return "(" + variable + " is unset)"
	case v == "void" || v == "none" || v == "":
		return fmt.Sprintf("(%s=%q exposes none)", variable, v)
	default:
		return fmt.Sprintf("(%s; %s=%s)", set, variable, v)
	}
}
