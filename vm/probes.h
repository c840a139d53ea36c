/* probes.h - the USDT probe sites, compiled out unless the build generates squeak_probes.h. */
#ifndef SQVM_PROBES_H
#define SQVM_PROBES_H

#define SQ_PROBE_METHOD_ENTRY(frame) ((void)0)
#define SQ_PROBE_METHOD_RETURN(frame) ((void)0)

#endif
