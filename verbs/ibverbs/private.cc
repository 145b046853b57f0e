/* The IBVERBS_PRIVATE_34 interface: what rdma-core's provider libraries
 * (libmlx5, libefa ... which perftest and pyverbs load whether or not such
 * a device exists) import from libibverbs to drive a kernel uverbs device.
 * Debian links everything BIND_NOW, so each must exist; none of them is
 * ever reached for a device of ours (providers only see devices they
 * registered, and rocemu registers none of theirs), so each refuses:
 * EOPNOTSUPP for commands, NULL for constructors, nothing for the
 * registration and logging hooks. The arguments are not read, so the
 * definitions take none (the calling convention makes that safe). */
#include <errno.h>
#include <stddef.h>

extern "C" {

/* libmlx5 reads it to decide whether a destroy may outlive a dead device. */
bool verbs_allow_disassociate_destroy = false;

unsigned int __ioctl_final_num_attrs(void) { return 0; }
void __verbs_log(void) {}
void* _verbs_init_and_alloc_context(void) {
  errno = EOPNOTSUPP;
  return NULL;
}
int execute_ioctl(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_advise_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_alloc_dm(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_alloc_mw(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_alloc_pd(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_attach_mcast(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_close_xrcd(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_ah(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_counters(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_cq_ex(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_flow(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_flow_action_esp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_qp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_qp_ex(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_qp_ex2(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_rwq_ind_table(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_srq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_srq_ex(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_create_wq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_dealloc_mw(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_dealloc_pd(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_dereg_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_ah(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_counters(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_flow(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_flow_action(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_qp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_rwq_ind_table(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_srq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_destroy_wq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_detach_mcast(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_free_dm(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_get_context(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_flow_action_esp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_qp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_qp_ex(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_srq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_modify_wq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_open_qp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_open_xrcd(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_poll_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_post_recv(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_post_send(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_post_srq_recv(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_context(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_device_any(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_port(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_qp(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_query_srq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_read_counters(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_reg_dm_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_reg_dmabuf_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_reg_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_req_notify_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_rereg_mr(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_cmd_resize_cq(void) {
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}
int ibv_read_ibdev_sysfs_file(void) {
  errno = ENOENT;
  return -1;
}
void verbs_init_cq(void) {}
void* verbs_open_device(void) {
  errno = EOPNOTSUPP;
  return NULL;
}
void verbs_register_driver_34(void) {}
void verbs_set_ops(void) {}
void verbs_uninit_context(void) {}

}  // extern "C"
