// SPDX-License-Identifier: BSD-2-Clause
/* thread.c - starting the VM's helper threads (thread.h). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "thread.h"

#include <pthread.h>
#include <signal.h>

int thread_start_helper(void *(*fn)(void *), const char *name)
{
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved); /* the new thread inherits the mask */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64u << 10);
    pthread_t t;
    int err = pthread_create(&t, &attr, fn, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (err) return err;
    pthread_setname_np(t, name);
    pthread_detach(t);
    return 0;
}
