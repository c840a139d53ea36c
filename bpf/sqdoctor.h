// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqdoctor.h - what sqdoctor's own BPF program (the storms no other tool counts: the
 * doesNotUnderstand: sends and the exceptions signalled, by name) and user space share. */
#ifndef SQDOCTOR_H
#define SQDOCTOR_H

#include "sqcommon.h"

#define SQDOCTOR_MAX_KEYS 16384

enum { SQDOCTOR_DNU, SQDOCTOR_EXCEPTION };

/* DNU: cls the receiver's class name, sel the selector not understood. EXCEPTION: cls
 * the exception's class name, sender_cls and sel the method that signalled it. All are
 * the addresses of the VM's permanent name strings. */
struct sqdoctor_key {
	__u32 pid;
	__u32 kind;
	__u64 cls;
	__u64 sender_cls;
	__u64 sel;
};

#endif
