module github.com/gdrcheck/gdrcheck

go 1.26.0

require (
	github.com/Mellanox/rdmamap v1.1.0
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/prometheus/procfs v0.23.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/vishvananda/netlink v1.1.0 // indirect
	github.com/vishvananda/netns v0.0.0-20191106174202-0a2b9b5464df // indirect
	golang.org/x/sync v0.24.0 // indirect
)
