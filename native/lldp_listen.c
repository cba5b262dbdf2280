/*
 * Listens for LLDP frames (ethertype 0x88cc) on named network interfaces: what the deploy agent
 * needs to report its switch ports (src/agent/lldp.ts), which Node cannot do — it has no packet
 * sockets. One call, `listen(names, timeoutMs)`, returns a Promise of one entry per name:
 * `{ frame: Buffer | null, error: string | null }`, the first LLDP frame that interface received
 * (Ethernet header included) or null when none came before the deadline, and why an interface could
 * not be listened on. The wait runs on libuv's thread pool, never on the event loop.
 *
 * Each interface gets its own AF_PACKET socket bound to it for 0x88cc only, in promiscuous mode as
 * IPA puts it (the switch sends to 01:80:c2:00:00:0e, which a NIC's filter may drop) — through a
 * PACKET_ADD_MEMBERSHIP, which the kernel undoes when the socket closes, so no interface is left
 * promiscuous whatever happens to the agent. Frames the machine sent itself are ignored. Bounds: at
 * most 64 interfaces, a timeout of at most 10 minutes, frames truncated at 1600 bytes (IPA's).
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETH_P_LLDP_ 0x88cc
#define MAX_INTERFACES 64
#define MAX_TIMEOUT_MS 600000
#define FRAME_MAX 1600

typedef struct {
  char name[IF_NAMESIZE];
  int fd;
  int done;
  size_t length; /* bytes in frame; 0 = none */
  unsigned char frame[FRAME_MAX];
  char error[160];
} listener_t;

typedef struct {
  listener_t *listeners;
  size_t count;
  int64_t timeout_ms;
  napi_async_work work;
  napi_deferred deferred;
} job_t;

static napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(listener_t *l, const char *what) {
  snprintf(l->error, sizeof l->error, "%s: %s", what, strerror(errno));
  if (l->fd >= 0) close(l->fd);
  l->fd = -1;
  l->done = 1;
}

static void open_listener(listener_t *l) {
  unsigned int index = if_nametoindex(l->name);
  if (index == 0) {
    fail(l, "no such interface");
    return;
  }
  l->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_LLDP_));
  if (l->fd < 0) {
    fail(l, "packet socket");
    return;
  }
  struct sockaddr_ll addr;
  memset(&addr, 0, sizeof addr);
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_LLDP_);
  addr.sll_ifindex = (int)index;
  if (bind(l->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    fail(l, "bind");
    return;
  }
  struct packet_mreq mreq;
  memset(&mreq, 0, sizeof mreq);
  mreq.mr_ifindex = (int)index;
  mreq.mr_type = PACKET_MR_PROMISC;
  if (setsockopt(l->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) fail(l, "promiscuous mode");
}

/* Reads what is queued on a listener; keeps the first LLDP frame that came in from outside. */
static void drain(listener_t *l) {
  for (;;) {
    struct sockaddr_ll from;
    socklen_t fromlen = sizeof from;
    ssize_t n = recvfrom(l->fd, l->frame, sizeof l->frame, MSG_TRUNC, (struct sockaddr *)&from, &fromlen);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) fail(l, "receive");
      return;
    }
    if (from.sll_pkttype == PACKET_OUTGOING || n < ETH_HLEN) continue;
    l->length = (size_t)n > sizeof l->frame ? sizeof l->frame : (size_t)n;
    l->done = 1;
    close(l->fd);
    l->fd = -1;
    return;
  }
}

static void execute(napi_env env, void *data) {
  (void)env;
  job_t *job = data;
  for (size_t i = 0; i < job->count; i++) open_listener(&job->listeners[i]);
  int64_t deadline = now_ms() + job->timeout_ms;
  struct pollfd fds[MAX_INTERFACES];
  size_t map[MAX_INTERFACES];
  for (;;) {
    size_t n = 0;
    for (size_t i = 0; i < job->count; i++) {
      if (job->listeners[i].done) continue;
      fds[n].fd = job->listeners[i].fd;
      fds[n].events = POLLIN;
      fds[n].revents = 0;
      map[n++] = i;
    }
    int64_t left = deadline - now_ms();
    if (n == 0 || left <= 0) break;
    int ready = poll(fds, n, (int)left);
    if (ready < 0 && errno != EINTR) break;
    for (size_t k = 0; ready > 0 && k < n; k++) {
      if (fds[k].revents & (POLLIN | POLLERR)) drain(&job->listeners[map[k]]);
    }
  }
  for (size_t i = 0; i < job->count; i++) {
    if (job->listeners[i].fd >= 0) close(job->listeners[i].fd);
    job->listeners[i].fd = -1;
  }
}

static void complete(napi_env env, napi_status status, void *data) {
  job_t *job = data;
  napi_value result;
  napi_create_array_with_length(env, job->count, &result);
  for (size_t i = 0; i < job->count; i++) {
    listener_t *l = &job->listeners[i];
    napi_value entry, frame, error;
    napi_create_object(env, &entry);
    if (l->length > 0) {
      void *copy;
      napi_create_buffer_copy(env, l->length, l->frame, &copy, &frame);
    } else {
      napi_get_null(env, &frame);
    }
    if (l->error[0] != '\0') napi_create_string_utf8(env, l->error, NAPI_AUTO_LENGTH, &error);
    else napi_get_null(env, &error);
    napi_set_named_property(env, entry, "frame", frame);
    napi_set_named_property(env, entry, "error", error);
    napi_set_element(env, result, (uint32_t)i, entry);
  }
  if (status == napi_ok) {
    napi_resolve_deferred(env, job->deferred, result);
  } else {
    napi_value message, err;
    napi_create_string_utf8(env, "listen: the wait did not run", NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, NULL, message, &err);
    napi_reject_deferred(env, job->deferred, err);
  }
  napi_delete_async_work(env, job->work);
  free(job->listeners);
  free(job);
}

/* listen(names: string[], timeoutMs: number): Promise<{ frame: Buffer | null, error: string | null }[]> */
static napi_value listen_lldp(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 2) return throw_error(env, "listen: expected (names, timeoutMs)");
  bool is_array;
  uint32_t count;
  if (napi_is_array(env, argv[0], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[0], &count) != napi_ok)
    return throw_error(env, "listen: names must be an array");
  if (count > MAX_INTERFACES) return throw_error(env, "listen: at most 64 interfaces");
  int64_t timeout;
  if (napi_get_value_int64(env, argv[1], &timeout) != napi_ok || timeout < 0 || timeout > MAX_TIMEOUT_MS)
    return throw_error(env, "listen: timeoutMs must be 0 to 600000");
  job_t *job = calloc(1, sizeof *job);
  listener_t *listeners = calloc(count > 0 ? count : 1, sizeof *listeners);
  if (job == NULL || listeners == NULL) {
    free(job);
    free(listeners);
    return throw_error(env, "listen: out of memory");
  }
  job->listeners = listeners;
  job->count = count;
  job->timeout_ms = timeout;
  for (uint32_t i = 0; i < count; i++) {
    napi_value name;
    size_t len;
    listeners[i].fd = -1;
    if (napi_get_element(env, argv[0], i, &name) != napi_ok || napi_get_value_string_utf8(env, name, NULL, 0, &len) != napi_ok ||
        len == 0 || len >= IF_NAMESIZE ||
        napi_get_value_string_utf8(env, name, listeners[i].name, sizeof listeners[i].name, &len) != napi_ok) {
      free(listeners);
      free(job);
      return throw_error(env, "listen: each name must be a string of 1 to 15 bytes");
    }
  }
  napi_value promise, resource_name;
  napi_create_promise(env, &job->deferred, &promise);
  napi_create_string_utf8(env, "ironring.lldp", NAPI_AUTO_LENGTH, &resource_name);
  napi_create_async_work(env, NULL, resource_name, execute, complete, job, &job->work);
  if (napi_queue_async_work(env, job->work) != napi_ok) {
    napi_delete_async_work(env, job->work);
    free(listeners);
    free(job);
    return throw_error(env, "listen: cannot queue the wait");
  }
  return promise;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "listen", NAPI_AUTO_LENGTH, listen_lldp, NULL, &fn);
  napi_set_named_property(env, exports, "listen", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
