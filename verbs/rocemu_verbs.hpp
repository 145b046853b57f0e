// A thin RAII layer over the C API: each object is a unique_ptr whose
// deleter is the matching rocemu_destroy/dealloc/dereg call, so a scope
// releases what it created in reverse order. Creation helpers return
// absl::StatusOr with the errno the C call reported.
#ifndef ROCEMU_VERBS_ROCEMU_VERBS_HPP_
#define ROCEMU_VERBS_ROCEMU_VERBS_HPP_

#include <errno.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "verbs/rocemu_verbs.h"

namespace rocemu::verbs {

template <typename T, auto Fn>
struct Deleter {
  void operator()(T* p) const {
    if (p != nullptr) Fn(p);
  }
};

using Context = std::unique_ptr<rocemu_context,
                                Deleter<rocemu_context, rocemu_close_device>>;
using Pd = std::unique_ptr<rocemu_pd, Deleter<rocemu_pd, rocemu_dealloc_pd>>;
using Buf = std::unique_ptr<rocemu_buf, Deleter<rocemu_buf, rocemu_free_buf>>;
using Mr = std::unique_ptr<rocemu_mr, Deleter<rocemu_mr, rocemu_dereg_mr>>;
using CompChannel =
    std::unique_ptr<rocemu_comp_channel,
                    Deleter<rocemu_comp_channel, rocemu_destroy_comp_channel>>;
using Cq = std::unique_ptr<rocemu_cq, Deleter<rocemu_cq, rocemu_destroy_cq>>;
using Qp = std::unique_ptr<rocemu_qp, Deleter<rocemu_qp, rocemu_destroy_qp>>;
using Srq =
    std::unique_ptr<rocemu_srq, Deleter<rocemu_srq, rocemu_destroy_srq>>;
using Ah = std::unique_ptr<rocemu_ah, Deleter<rocemu_ah, rocemu_destroy_ah>>;
// The NULL-terminated array of rocemu_get_device_list.
using DeviceList =
    std::unique_ptr<rocemu_device*[],
                    Deleter<rocemu_device*, rocemu_free_device_list>>;

namespace internal {
template <typename Ptr>
absl::StatusOr<Ptr> Wrap(typename Ptr::pointer p, const char* what) {
  if (p == nullptr) return absl::ErrnoToStatus(errno, what);
  return Ptr(p);
}
}  // namespace internal

inline absl::StatusOr<Context> OpenDevice(const char* socket_path = nullptr) {
  return internal::Wrap<Context>(rocemu_open_device(socket_path),
                                 "rocemu_open_device");
}
inline absl::StatusOr<Pd> AllocPd(rocemu_context* ctx) {
  return internal::Wrap<Pd>(rocemu_alloc_pd(ctx), "rocemu_alloc_pd");
}
inline absl::StatusOr<Buf> AllocBuf(rocemu_context* ctx, size_t length) {
  return internal::Wrap<Buf>(rocemu_alloc_buf(ctx, length), "rocemu_alloc_buf");
}
inline absl::StatusOr<Mr> RegMr(rocemu_pd* pd, void* addr, size_t length,
                                int access) {
  return internal::Wrap<Mr>(rocemu_reg_mr(pd, addr, length, access),
                            "rocemu_reg_mr");
}
inline absl::StatusOr<CompChannel> CreateCompChannel(rocemu_context* ctx) {
  return internal::Wrap<CompChannel>(rocemu_create_comp_channel(ctx),
                                     "rocemu_create_comp_channel");
}
inline absl::StatusOr<Cq> CreateCq(rocemu_context* ctx, int cqe,
                                   void* cq_context = nullptr,
                                   rocemu_comp_channel* channel = nullptr) {
  return internal::Wrap<Cq>(rocemu_create_cq(ctx, cqe, cq_context, channel, 0),
                            "rocemu_create_cq");
}
inline absl::StatusOr<Qp> CreateQp(rocemu_pd* pd, rocemu_qp_init_attr& attr) {
  return internal::Wrap<Qp>(rocemu_create_qp(pd, &attr), "rocemu_create_qp");
}
inline absl::StatusOr<Srq> CreateSrq(rocemu_pd* pd,
                                     rocemu_srq_init_attr& attr) {
  return internal::Wrap<Srq>(rocemu_create_srq(pd, &attr), "rocemu_create_srq");
}
inline absl::StatusOr<Ah> CreateAh(rocemu_pd* pd, rocemu_ah_attr& attr) {
  return internal::Wrap<Ah>(rocemu_create_ah(pd, &attr), "rocemu_create_ah");
}
// The devices (*num_devices of them, if given) and a context on one.
inline absl::StatusOr<DeviceList> GetDeviceList(int* num_devices = nullptr) {
  rocemu_device** list = rocemu_get_device_list(num_devices);
  if (list == nullptr) {
    return absl::ErrnoToStatus(errno, "rocemu_get_device_list");
  }
  return DeviceList(list);
}
inline absl::StatusOr<Context> OpenDevice(const rocemu_device* device) {
  return internal::Wrap<Context>(rocemu_open_device_from(device),
                                 "rocemu_open_device_from");
}

// 0 / errno results of the C API as a Status.
inline absl::Status Check(int err, const char* what) {
  return err == 0 ? absl::OkStatus() : absl::ErrnoToStatus(err, what);
}

// Queries returning their attributes.
inline absl::StatusOr<rocemu_device_attr> QueryDevice(rocemu_context* ctx) {
  rocemu_device_attr a{};
  absl::Status st = Check(rocemu_query_device(ctx, &a), "rocemu_query_device");
  if (!st.ok()) return st;
  return a;
}
inline absl::StatusOr<rocemu_port_attr> QueryPort(rocemu_context* ctx,
                                                  uint8_t port_num = 1) {
  rocemu_port_attr a{};
  absl::Status st =
      Check(rocemu_query_port(ctx, port_num, &a), "rocemu_query_port");
  if (!st.ok()) return st;
  return a;
}
// The next async event (timeout_ms < 0: wait for ever); acknowledge it
// with rocemu_ack_async_event.
inline absl::StatusOr<rocemu_async_event> GetAsyncEvent(rocemu_context* ctx,
                                                        int timeout_ms) {
  rocemu_async_event e{};
  absl::Status st = Check(rocemu_get_async_event(ctx, &e, timeout_ms),
                          "rocemu_get_async_event");
  if (!st.ok()) return st;
  return e;
}

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_ROCEMU_VERBS_HPP_
