// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_watchdog.h - a hang is a finding with its input kept: libFuzzer's own -timeout
 * counts wall-clock time and rides on SIGALRM and ITIMER_REAL, which a target may take
 * over (the VM's scheduler once did), and an outer timeout kills the fuzzer before it
 * can save anything. */
#ifndef FUZZ_WATCHDOG_H
#define FUZZ_WATCHDOG_H

/* One input starts: if it is still running after limit_ms of CPU time (or ten times
 * that of wall-clock time, for an input that blocks), a watchdog thread prints "fuzz
 * watchdog: ... a hang" and sends SIGABRT to the fuzzing thread, so libFuzzer prints
 * where it was and saves the input (crash-<sha1>; scripts/fuzz.sh renames it
 * hang-<sha1>). The first call starts the thread. */
void fuzz_watchdog_arm(unsigned limit_ms);
/* The input ended. */
void fuzz_watchdog_disarm(void);

#endif
