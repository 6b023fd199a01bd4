package node

import (
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// recordingLimit caps each JSON file a snapshot records under gdrcheck/
// (nvml.json, gpudirect.json, container.json, rdma.json), which are read
// whole: those of an 8 x H100 node with 8 NICs are under 10 KB
// (fixtures/nodes), so 1 MiB is a hundred times the largest node.
var recordingLimit = bounded.Limit{Bytes: 1 << 20, What: "a node recording",
	Why: "the recordings of an 8-GPU, 8-NIC node are under 10 KB"}

// readRecording reads one of a snapshot's JSON recordings, refusing one
// over recordingLimit unread; errors name the file.
func readRecording(path string) ([]byte, error) { return bounded.ReadFile(path, recordingLimit) }

// Kernel log records are at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX),
// so a longer line in a recorded kmsg.txt is no record and is skipped;
// maxLogLines caps the distinct trouble lines kept, each clipped to
// maxLogLine bytes.
const (
	maxKmsgLine = 64 << 10
	maxLogLine  = 4 << 10
	maxLogLines = 256
)
