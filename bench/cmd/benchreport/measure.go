package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// tagFlags collects repeated -tag k=v flags.
type tagFlags map[string]string

func (t tagFlags) String() string { return fmt.Sprint(map[string]string(t)) }
func (t tagFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("tag %q: want key=value", s)
	}
	t[k] = v
	return nil
}

// measure runs the command after "--", and appends a "run" record.
func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "broker process whose CPU time is measured (required)")
	out := fs.String("out", "", "results file to append to (required)")
	clk := fs.Int("clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	tags := tagFlags{}
	fs.Var(tags, "tag", "key=value describing the run (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmdArgs := fs.Args()
	if *pid <= 0 || *out == "" || len(cmdArgs) == 0 {
		return fmt.Errorf("need -pid, -out and a command after --")
	}
	before, err := procCPU(*pid, *clk)
	if err != nil {
		return err
	}
	var stdout bytes.Buffer
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	start := time.Now()
	runErr := cmd.Run()
	wall := time.Since(start)
	after, err := procCPU(*pid, *clk)
	if err != nil {
		return fmt.Errorf("broker gone after the run: %w", err)
	}
	rec := record{Kind: "run", Tags: tags, Wall: wall.Seconds(), BrokerCPU: after - before}
	if cmd.ProcessState != nil {
		rec.Exit = cmd.ProcessState.ExitCode()
		rec.ClientCPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	} else if runErr != nil {
		return runErr
	}
	var res perfResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err == nil {
		rec.Result = &res
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return runErr
	}
	return appendRecord(*out, rec)
}

// procCPU returns utime+stime of pid in seconds.
func procCPU(pid, clk int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after the last ')'. There fields[0] is field 3 (state),
	// so utime (14) and stime (15) are fields[11] and fields[12].
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return float64(u+s) / float64(clk), nil
}
