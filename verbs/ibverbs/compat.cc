// The IBVERBS_1.0 versions of the 33 names 1.1 replaced (libibverbs
// before 2006: other struct layouts, a kernel ABI long gone). No program
// built since binds them (none of Debian's do), so each refuses: NULL or
// an errno return with errno ENOSYS, nothing for the void ones. Also the
// hidden ibv_register_driver@IBVERBS_1.1 (the provider registration of
// that era), which does nothing.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {

void rocemu_compat10_ibv_ack_async_event(void) {}
__asm__(
    ".symver "
    "rocemu_compat10_ibv_ack_async_event,ibv_ack_async_event@IBVERBS_1.0");
void rocemu_compat10_ibv_ack_cq_events(void) {}
__asm__(
    ".symver rocemu_compat10_ibv_ack_cq_events,ibv_ack_cq_events@IBVERBS_1.0");
void* rocemu_compat10_ibv_alloc_pd(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_alloc_pd,ibv_alloc_pd@IBVERBS_1.0");
int rocemu_compat10_ibv_attach_mcast(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(
    ".symver rocemu_compat10_ibv_attach_mcast,ibv_attach_mcast@IBVERBS_1.0");
int rocemu_compat10_ibv_close_device(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(
    ".symver rocemu_compat10_ibv_close_device,ibv_close_device@IBVERBS_1.0");
void* rocemu_compat10_ibv_create_ah(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_create_ah,ibv_create_ah@IBVERBS_1.0");
void* rocemu_compat10_ibv_create_cq(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_create_cq,ibv_create_cq@IBVERBS_1.0");
void* rocemu_compat10_ibv_create_qp(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_create_qp,ibv_create_qp@IBVERBS_1.0");
void* rocemu_compat10_ibv_create_srq(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_create_srq,ibv_create_srq@IBVERBS_1.0");
int rocemu_compat10_ibv_dealloc_pd(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_dealloc_pd,ibv_dealloc_pd@IBVERBS_1.0");
int rocemu_compat10_ibv_dereg_mr(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_dereg_mr,ibv_dereg_mr@IBVERBS_1.0");
int rocemu_compat10_ibv_destroy_ah(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_destroy_ah,ibv_destroy_ah@IBVERBS_1.0");
int rocemu_compat10_ibv_destroy_cq(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_destroy_cq,ibv_destroy_cq@IBVERBS_1.0");
int rocemu_compat10_ibv_destroy_qp(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_destroy_qp,ibv_destroy_qp@IBVERBS_1.0");
int rocemu_compat10_ibv_destroy_srq(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_destroy_srq,ibv_destroy_srq@IBVERBS_1.0");
int rocemu_compat10_ibv_detach_mcast(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(
    ".symver rocemu_compat10_ibv_detach_mcast,ibv_detach_mcast@IBVERBS_1.0");
void rocemu_compat10_ibv_free_device_list(void) {}
__asm__(
    ".symver "
    "rocemu_compat10_ibv_free_device_list,ibv_free_device_list@IBVERBS_1.0");
int rocemu_compat10_ibv_get_async_event(void) {
  errno = ENOSYS;
  return -1;
}
__asm__(
    ".symver "
    "rocemu_compat10_ibv_get_async_event,ibv_get_async_event@IBVERBS_1.0");
int rocemu_compat10_ibv_get_cq_event(void) {
  errno = ENOSYS;
  return -1;
}
__asm__(
    ".symver rocemu_compat10_ibv_get_cq_event,ibv_get_cq_event@IBVERBS_1.0");
uint64_t rocemu_compat10_ibv_get_device_guid(void) { return 0; }
__asm__(
    ".symver "
    "rocemu_compat10_ibv_get_device_guid,ibv_get_device_guid@IBVERBS_1.0");
void* rocemu_compat10_ibv_get_device_list(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(
    ".symver "
    "rocemu_compat10_ibv_get_device_list,ibv_get_device_list@IBVERBS_1.0");
void* rocemu_compat10_ibv_get_device_name(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(
    ".symver "
    "rocemu_compat10_ibv_get_device_name,ibv_get_device_name@IBVERBS_1.0");
int rocemu_compat10_ibv_modify_qp(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_modify_qp,ibv_modify_qp@IBVERBS_1.0");
int rocemu_compat10_ibv_modify_srq(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_modify_srq,ibv_modify_srq@IBVERBS_1.0");
void* rocemu_compat10_ibv_open_device(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_open_device,ibv_open_device@IBVERBS_1.0");
int rocemu_compat10_ibv_query_device(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(
    ".symver rocemu_compat10_ibv_query_device,ibv_query_device@IBVERBS_1.0");
int rocemu_compat10_ibv_query_gid(void) {
  errno = ENOSYS;
  return -1;
}
__asm__(".symver rocemu_compat10_ibv_query_gid,ibv_query_gid@IBVERBS_1.0");
int rocemu_compat10_ibv_query_pkey(void) {
  errno = ENOSYS;
  return -1;
}
__asm__(".symver rocemu_compat10_ibv_query_pkey,ibv_query_pkey@IBVERBS_1.0");
int rocemu_compat10_ibv_query_port(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_query_port,ibv_query_port@IBVERBS_1.0");
int rocemu_compat10_ibv_query_qp(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_query_qp,ibv_query_qp@IBVERBS_1.0");
int rocemu_compat10_ibv_query_srq(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_query_srq,ibv_query_srq@IBVERBS_1.0");
void* rocemu_compat10_ibv_reg_mr(void) {
  errno = ENOSYS;
  return NULL;
}
__asm__(".symver rocemu_compat10_ibv_reg_mr,ibv_reg_mr@IBVERBS_1.0");
int rocemu_compat10_ibv_resize_cq(void) {
  errno = ENOSYS;
  return ENOSYS;
}
__asm__(".symver rocemu_compat10_ibv_resize_cq,ibv_resize_cq@IBVERBS_1.0");
void rocemu_compat_ibv_register_driver(void) {}
__asm__(
    ".symver "
    "rocemu_compat_ibv_register_driver,ibv_register_driver@IBVERBS_1.1");

}  // extern "C"
