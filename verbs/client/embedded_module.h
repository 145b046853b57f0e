// The C interface of librocemu_embedded.so, the module that runs a whole
// RNIC inside an application's process (emulator/embedded/embedded.h). The
// application library loads it with dlopen only when $ROCEMU_EMBEDDED asks
// for it, so programs that talk to a daemon never load DPDK.
#ifndef ROCEMU_VERBS_CLIENT_EMBEDDED_MODULE_H_
#define ROCEMU_VERBS_CLIENT_EMBEDDED_MODULE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// The name of the module's progress thread, the one that starts the EAL:
// the library knows by it that the EAL's start-up loaded it (a driver
// linking libibverbs), where it must not start an RNIC.
#define ROCEMU_EMBEDDED_PROGRESS_THREAD "rocemu-progress"

// Starts the RNIC the rocemud configuration at `config_path` describes (once
// per process). Returns 0 and the verbs sockets, '\n'-separated, in
// `sockets`; or -1 and why in `error`; or -2, with nothing to say, when
// called from the thread that is starting it (a library the EAL loads).
int rocemu_embedded_start(const char* config_path, char* sockets,
                          size_t sockets_len, char* error, size_t error_len);
typedef int (*rocemu_embedded_start_fn)(const char*, char*, size_t, char*,
                                        size_t);

// Runs one pass of the RNIC's loop on the calling thread unless another
// thread is running one; returns 1 if anything moved, 0 if nothing did, -1
// if another thread held the loop (the caller should give its core away:
// that thread may need it).
int rocemu_embedded_pump(void);
typedef int (*rocemu_embedded_pump_fn)(void);

#ifdef __cplusplus
}
#endif

#endif  // ROCEMU_VERBS_CLIENT_EMBEDDED_MODULE_H_
