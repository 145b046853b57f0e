// Early return of a failed absl::Status, for code that builds one
// absl::Status from many steps (the config loader, replay cases).
#ifndef ROCEMU_CONFIG_STATUS_MACROS_H_
#define ROCEMU_CONFIG_STATUS_MACROS_H_

#include "absl/status/status.h"

// Evaluates `expr` (an absl::Status) once; returns it if it is an error.
#define RETURN_IF_ERROR(expr)                                         \
  do {                                                                \
    if (absl::Status rocemu_status_ = (expr); !rocemu_status_.ok()) { \
      return rocemu_status_;                                          \
    }                                                                 \
  } while (0)

#endif  // ROCEMU_CONFIG_STATUS_MACROS_H_
