package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes where a run ran, so that two reports can be compared
// only when they should be.
type Machine struct {
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"cores"` // runtime.NumCPU: the CPUs this process may use
	GOMAXPROCS  int    `json:"gomaxprocs"`
	MemoryBytes uint64 `json:"memory_bytes"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Kernel      string `json:"kernel,omitempty"`
	GoVersion   string `json:"go_version"`
	GitCommit   string `json:"git_commit,omitempty"`
	GitDirty    bool   `json:"git_dirty"` // tracked files differ from the commit
	// WorkFilesystem is the filesystem type of the scratch directory, where
	// the WAL and recovery stores live ("ext4", "tmpfs", …). On tmpfs an
	// fsync costs nothing and the durable-write figures mean little.
	WorkFilesystem string `json:"work_filesystem,omitempty"`
}

// Load is how busy the machine was besides the run (from /proc): a shared
// machine's figures are only as good as its quiet. Pressure is the share
// of the last 60 s in which some task waited for CPU or IO (PSI "some
// avg60", %).
type Load struct {
	LoadAverage1m  float64 `json:"load_average_1m"`
	CPUPressure60s float64 `json:"cpu_pressure_60s_percent"`
	IOPressure60s  float64 `json:"io_pressure_60s_percent"`
}

func machineLoad() Load {
	var l Load
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			l.LoadAverage1m, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	l.CPUPressure60s = pressure("/proc/pressure/cpu")
	l.IOPressure60s = pressure("/proc/pressure/io")
	return l
}

// pressure returns the "some avg60" figure of a PSI file, or -1.
func pressure(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, field := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(field, "avg60="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// gitTimeout bounds each git query.
const gitTimeout = 5 * time.Second

func describeMachine(root, work string) Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		GoVersion:  runtime.Version(),
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if kib := procField("/proc/meminfo", "MemTotal:"); kib > 0 {
		m.MemoryBytes = uint64(kib) << 10
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	// NB: read-only git queries; --no-optional-locks keeps `git status` from
	// refreshing the index of a tree that other people are working in.
	if out, err := git(root, "rev-parse", "HEAD"); err == nil {
		m.GitCommit = out
		if status, err := git(root, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"); err == nil {
			m.GitDirty = status != ""
		}
	}
	m.WorkFilesystem = filesystemType(work)
	return m
}

func git(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// procField returns the integer after name in a /proc file of "Name: value
// unit" lines (VmRSS, MemTotal), or -1.
func procField(path, name string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			fields := strings.Fields(string(rest))
			if len(fields) > 0 {
				if v, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
					return v
				}
			}
		}
	}
	return -1
}

// residentBytes is this process's resident set (VmRSS), or 0 off Linux.
func residentBytes() uint64 {
	kib := procField("/proc/self/status", "VmRSS:")
	if kib < 0 {
		return 0
	}
	return uint64(kib) << 10
}

// filesystemType names the filesystem holding dir, by statfs magic.
func filesystemType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	switch uint32(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794C7630:
		return "overlayfs"
	case 0x2FC12FC1:
		return "zfs"
	}
	return "0x" + strconv.FormatUint(uint64(uint32(st.Type)), 16)
}

// moduleRoot walks up from dir to the directory holding Oja's go.mod.
func moduleRoot(dir string) (string, bool) {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/oja-exchange/oja\n")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
