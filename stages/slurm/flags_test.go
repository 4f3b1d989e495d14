package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/spn-project/spn/schema"
)

// Resolve takes the executor from the environment when the flag is not
// given and refuses Slurm flags for the local executor and contradictions.
func TestFlagsResolve(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	f := Flags{Poll: time.Second}
	if err := f.Resolve(env("")); err != nil || f.Executor != ExecutorLocal {
		t.Errorf("default: %q, %v", f.Executor, err)
	}
	f = Flags{Poll: time.Second}
	if err := f.Resolve(env(ExecutorSlurm)); err != nil || f.Executor != ExecutorSlurm {
		t.Errorf("from the environment: %q, %v", f.Executor, err)
	}
	for _, tc := range []struct {
		f    Flags
		want string
	}{
		{Flags{Wait: true}, "need --executor slurm"},
		{Flags{Executor: ExecutorSlurm, Hold: true, Wait: true, Poll: time.Second}, "exclude each other"},
		{Flags{Executor: ExecutorSlurm, Group: "x", Poll: time.Second}, "is not array or stage"},
		{Flags{Executor: ExecutorSlurm}, "--poll must be positive"},
		{Flags{Executor: "k8s"}, "is not local or slurm"},
	} {
		if err := tc.f.Resolve(env("")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	spec := &schema.Spec{Executor: schema.Executor{Slurm: schema.Slurm{Partition: "p", MaxArray: 10}}}
	cfg := (&Flags{Partition: "q"}).Config(spec)
	if cfg.Partition != "q" || cfg.MaxArray != 10 {
		t.Errorf("config %+v: want partition q (flag), max array 10 (spec)", cfg)
	}
}
