/* sqcommon.h - sizes shared by every tool's BPF program and its user-space half. */
#ifndef SQCOMMON_H
#define SQCOMMON_H

/* Room for a class name or a selector read from the VM; longer ones are cut (NUL kept). */
#define SQ_NAME_LEN 64

/* Slots of a log2 histogram: slot i counts values in [2^(i-1), 2^i - 1] (slot 0: 0 and 1). */
#define SQ_MAX_SLOTS 32

#endif
