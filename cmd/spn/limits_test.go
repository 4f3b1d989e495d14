package main

import (
	"bufio"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/graphfile"
)

// storeImported writes one graph as the dataset name imported into
// dataDir (the file spn data import writes), without going through a
// JSONL file of millions of lines.
func storeImported(t *testing.T, dataDir, name string, g data.Graph) {
	t.Helper()
	ds := &data.Dataset{Name: name, Graphs: []data.Graph{g}, NumClasses: 2}
	dir := filepath.Join(dataDir, graphfile.ImportedDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteDatasetFile(filepath.Join(dir, name+".bin"), ds); err != nil {
		t.Fatal(err)
	}
}

// pathGraph is a path on n nodes.
func pathGraph(t *testing.T, n int) data.Graph {
	t.Helper()
	e := make([][2]int, n-1)
	for i := range e {
		e[i] = [2]int{i, i + 1}
	}
	g, err := data.FromEdges(n, e)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The sizes of the issue: spn data stats on a path of 10^6 nodes ran for
// 44 minutes, on 2^24 nodes without edges for 480 s; spn data show
// panicked (2^24 nodes) or died out of memory (10^6). Both refuse at
// once, naming the size and the limit, with exit 2.
func TestDataSizeRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds graphs of millions of nodes")
	}
	dir := t.TempDir()
	storeImported(t, dir, "path1e6", pathGraph(t, 1_000_000))
	storeImported(t, dir, "empty2p24", data.Graph{N: 1 << 24, Adj: data.CSR{Ptr: make([]int32, 1<<24+1)}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", "path1e6"}, "spn data stats: statistics of path1e6: graph 0: statistics (a BFS from every node): the graph has 1000000 nodes, at most 65536 are allowed (the cost grows at least with the square of the nodes)\n"},
		{[]string{"stats", "empty2p24"}, "spn data stats: statistics of empty2p24: graph 0: statistics (a BFS from every node): the graph has 16777216 nodes, at most 65536 are allowed (the cost grows at least with the square of the nodes)\n"},
		{[]string{"show", "path1e6", "--graph", "0"}, "spn data show: path1e6 graph 0: distance matrix: the graph has 1000000 nodes, at most 4096 are allowed (the cost grows at least with the square of the nodes)\n"},
		{[]string{"show", "empty2p24", "--graph", "0"}, "spn data show: empty2p24 graph 0: distance matrix: the graph has 16777216 nodes, at most 4096 are allowed (the cost grows at least with the square of the nodes)\n"},
	} {
		code, out, errs := dataRun(dir, "", c.args...)
		if code != exitUsage || out != "" || errs != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q\nwant exit 2, %q", c.args, code, out, errs, c.want)
		}
	}
}

// TestHelperMain is not a test: run as a subprocess with SPN_CMD_MAIN=1 it
// is spn's main with the arguments SPN_CMD_ARGS holds (JSON): it installs
// the signal handler first, says "ready" on stderr, then runs them.
func TestHelperMain(t *testing.T) {
	if os.Getenv("SPN_CMD_MAIN") != "1" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("SPN_CMD_ARGS")), &args); err != nil {
		panic(err)
	}
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	a.catchSignals()
	os.Stderr.WriteString("ready\n")
	os.Exit(a.main(args))
}

// signalChild starts spn ARGS in a child process (TestHelperMain) with
// the environment env, sends it sig once it is ready (after wait) and
// requires it to exit with code within 2 s of the signal. It returns the
// child's stderr.
func signalChild(t *testing.T, env []string, sig syscall.Signal, code int, wait time.Duration, args ...string) string {
	t.Helper()
	js, _ := json.Marshal(args)
	cmd := osexec.Command(os.Args[0], "-test.run=^TestHelperMain$")
	cmd.Env = append(os.Environ(), append(env, "SPN_CMD_MAIN=1", "SPN_CMD_ARGS="+string(js))...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if sc.Text() == "ready" {
			break
		}
	}
	time.Sleep(wait)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for sc.Scan() {
			log = append(log, sc.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(2 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("spn %v still running 2 s after %v\n%s", args, sig, strings.Join(log, "\n"))
	}
	ee, ok := err.(*osexec.ExitError)
	if !ok || ee.ExitCode() != code {
		t.Fatalf("spn %v after %v: %v, want exit %d\n%s", args, sig, err, code, strings.Join(log, "\n"))
	}
	return strings.Join(log, "\n")
}

// One SIGTERM stops spn data stats inside the BFS of one large graph (a
// path of 60,000 nodes, under the size limit, whose statistics take
// hours): exit 143 within 2 s.
func TestDataStatsSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	storeImported(t, dir, "path6e4", pathGraph(t, 60_000))
	signalChild(t, []string{envDataDir + "=" + dir}, syscall.SIGTERM, 143, 500*time.Millisecond, "data", "stats", "path6e4")
}

// A SIGINT before spn run takes its signal context (here while it waits
// to read its spec from a FIFO nobody writes) ends it with 130 and a
// message, not through Go's default handler.
func TestEarlySignal(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "spec.cue")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	log := signalChild(t, []string{"SPN_CACHE=" + filepath.Join(dir, "cache")}, syscall.SIGINT, 130, 0,
		"run", fifo, "--out", filepath.Join(dir, "out"))
	if !strings.HasSuffix(log, "spn run: interrupted") {
		t.Errorf("stderr:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("the results folder was created")
	}
}
