#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/cli/sigint.py [--after S] [--twice] -- COMMAND...: Ctrl-C, sent for real.

Starts COMMAND (with SIGINT at its default, as from a terminal), sends it SIGINT once it
has run S seconds (0.5 by default), and waits up to 5 s for it to end. Prints how it
ended, then its stderr:

    exit status 130 within 5 s
    ERROR: interrupted (SIGINT) in Integer>>*
        at Nil>>doIt (-e:1)

--twice: COMMAND's stdout is a pipe nobody reads, so it blocks writing, where it cannot
act on an interrupt; the first SIGINT must leave it running ("still running after the
first SIGINT"), the second must kill it ("killed by SIGINT"). Exit status 0 when COMMAND
ended in time, 1 when it had to be killed (tests/cli.sh compares the output).
"""
import os
import signal
import subprocess
import sys
import tempfile
import time


def wait_for(proc, seconds):
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def ended(status):
    if status < 0:
        return "killed by %s" % signal.Signals(-status).name
    return "exit status %d" % status


def main():
    args = sys.argv[1:]
    after, twice = 0.5, False
    while args and args[0] != "--":
        if args[0] == "--after":
            after = float(args[1])
            args = args[2:]
        elif args[0] == "--twice":
            twice = True
            args = args[1:]
        else:
            sys.exit("usage: sigint.py [--after S] [--twice] -- COMMAND...")
    cmd = args[1:]
    err = tempfile.TemporaryFile()
    stdout = subprocess.PIPE if twice else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=err,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if wait_for(proc, after) is not None:
        print("ended before the SIGINT: " + ended(proc.returncode))
    else:
        proc.send_signal(signal.SIGINT)
        if twice:
            if wait_for(proc, 0.5) is None:
                print("still running after the first SIGINT")
            proc.send_signal(signal.SIGINT)
        status = wait_for(proc, 5)
        if status is None:
            proc.kill()
            proc.wait()
            print("still running 5 s after the SIGINT: killed")
        else:
            print(ended(status) + " within 5 s")
    err.seek(0)
    sys.stdout.write(err.read().decode(errors="replace"))
    return 0 if proc.returncode != -signal.SIGKILL else 1


if __name__ == "__main__":
    sys.exit(main())
