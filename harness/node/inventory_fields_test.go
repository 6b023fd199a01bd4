package node

import (
	"strings"
	"testing"
)

// Each identifier the maps carry is refused, by name, unless it has its
// source's form; the fixtures' own forms pass.
func TestInventoryCheckFieldsNamesTheFieldOfTheWrongForm(t *testing.T) {
	good := func() Inventory {
		return Inventory{Node: "h100-node", GPUs: []InventoryGPU{{
			Index: 0, UUID: "GPU-6a1c0f3e-0000-4000-8000-000000000000", BusID: "0000:18:00.0", Name: "NVIDIA H100 $(touch X)\n",
			CPUList: "0-55,112-167", PreferredNIC: "mlx5_0", PreferredPort: "mlx5_0:1", Path: PathPIX,
		}}}
	}
	if err := good().CheckFields(); err != nil {
		t.Fatalf("a good inventory (with a hostile GPU name, which is free text): %v", err)
	}
	noNVML := good()
	noNVML.GPUs[0].UUID, noNVML.GPUs[0].PreferredNIC, noNVML.GPUs[0].PreferredPort, noNVML.GPUs[0].CPUList, noNVML.Node = "", "", "", "", ""
	if err := noNVML.CheckFields(); err != nil {
		t.Errorf("empty optional fields: %v", err)
	}
	for _, c := range []struct {
		field string
		set   func(inv *Inventory, v string)
		bad   []string
	}{
		{"node (proc/sys/kernel/hostname)", func(inv *Inventory, v string) { inv.Node = v }, []string{"n1\ntouch X", "n1;x", "-n1", "n$(x)"}},
		{"gpus[0]: bus_id", func(inv *Inventory, v string) { inv.GPUs[0].BusID = v }, []string{"0000:18:00.0\n", "0000:18:00.0;x", "18:00.0", "", "0000:18:00.8"}},
		{"gpus[0]: uuid", func(inv *Inventory, v string) { inv.GPUs[0].UUID = v }, []string{"GPU-6a1c0f3e-0000-4000-8000-000000000000\nx", "GPU-`x`", "6a1c0f3e"}},
		{"gpus[0]: cpu_list (local_cpulist)", func(inv *Inventory, v string) { inv.GPUs[0].CPUList = v }, []string{"0-55;x", "0-55\n", "0-", "0-2147483647", " 1", "+1"}},
		{"gpus[0]: preferred_nic", func(inv *Inventory, v string) {
			inv.GPUs[0].PreferredNIC, inv.GPUs[0].PreferredPort = v, v+":1"
		}, []string{"mlx5_0;x", "mlx5 0", "-mlx5", "mlx5_0\n", "mlx5/0"}},
		{"gpus[0]: preferred_port", func(inv *Inventory, v string) { inv.GPUs[0].PreferredPort = v }, []string{"mlx5_0:1;x", "mlx5_1:1", "mlx5_0:", "mlx5_0"}},
	} {
		for _, v := range c.bad {
			inv := good()
			c.set(&inv, v)
			err := inv.CheckFields()
			if err == nil || !strings.HasPrefix(err.Error(), c.field) {
				t.Errorf("%s %q: %v, want an error naming %s", c.field, v, err, c.field)
			}
		}
	}
}
