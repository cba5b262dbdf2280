/*
 * The data phase of an octet-mode TFTP read transfer on its own thread (see
 * src/boot/tftp/native-engine.ts). The JavaScript side parses the request, negotiates options,
 * opens the file and the connected transfer socket; this loop then sends blocks, waits for ACKs,
 * retransmits on timeout and reports how the transfer ended. Its rules are those of
 * src/boot/tftp/session.ts (the engine used when this one is not built): only a timeout
 * retransmits, duplicate ACKs are ignored, an ACK of block k starts the next window at k+1, block
 * numbers wrap past 65535, and a transfer running alone may busy-poll (spin-policy rules of
 * src/boot/tftp/busy-poll.ts).
 *
 * Per round trip this costs one send and one receive: the socket is put in blocking mode with a
 * 100 ms receive timeout (the granularity of aborts and retransmission timeouts), and the file is
 * read ahead in large chunks.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MEASURE_BLOCKS 128
#define CYCLE_BLOCKS 4096
#define BACKOFF_MAX 1024
#define READ_AHEAD (256 * 1024)
#define WAIT_SLICE_MS 100

static atomic_int active_transfers = 0;

typedef struct {
  int sock;
  int file;
  uint64_t size;
  int blksize;
  int windowsize;
  double timeout_ms;
  int retries;
  unsigned char *oack;
  size_t oack_len;
  int spin_us;
  atomic_int abort_requested;
  int abort_code;
  char abort_message[128];
  napi_threadsafe_function tsfn;
  /* Outcome. */
  int ok;
  uint64_t bytes;
  uint64_t blocks;
  uint64_t polled;
  char reason[200];
} transfer_t;

typedef struct {
  uint64_t blocks, mark_blocks;
  double mark_at, spin_cost;
  int spin_wins, misses, skip;
} spin_policy_t;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int policy_spinning(const spin_policy_t *p) {
  if (p->blocks < MEASURE_BLOCKS) return 1;
  if (p->blocks < 2 * MEASURE_BLOCKS) return 0;
  return p->spin_wins;
}

static int policy_take_turn(spin_policy_t *p) {
  if (!policy_spinning(p)) return 0;
  if (p->skip > 0) {
    p->skip -= 1;
    return 0;
  }
  return 1;
}

static void policy_miss(spin_policy_t *p) {
  int skip = p->misses >= 10 ? BACKOFF_MAX : 1 << p->misses;
  p->skip = skip > BACKOFF_MAX ? BACKOFF_MAX : skip;
  p->misses += 1;
}

static void policy_acknowledged(spin_policy_t *p, uint64_t n, double now) {
  uint64_t before = p->blocks;
  p->blocks += n;
  if (before < MEASURE_BLOCKS && p->blocks >= MEASURE_BLOCKS) {
    p->spin_cost = (now - p->mark_at) / (double)(p->blocks - p->mark_blocks);
    p->mark_at = now;
    p->mark_blocks = p->blocks;
  } else if (before < 2 * MEASURE_BLOCKS && p->blocks >= 2 * MEASURE_BLOCKS) {
    double sleep_cost = (now - p->mark_at) / (double)(p->blocks - p->mark_blocks);
    p->spin_wins = p->spin_cost < sleep_cost;
  } else if (p->blocks >= CYCLE_BLOCKS) {
    p->blocks = 0;
    p->mark_at = now;
    p->mark_blocks = 0;
  }
}

typedef struct {
  transfer_t *t;
  unsigned char *slots; /* (windowsize + 1) packets of 4 + blksize bytes */
  size_t *lens;
  int nslots;
  unsigned char *ra; /* read-ahead buffer */
  size_t ra_cap;
  uint64_t ra_off, ra_len;
  uint64_t last; /* final block (payload shorter than blksize) */
  uint64_t acked, sent, next, filled;
  int awaiting_oack;
  int retries_left;
  double last_progress;
  spin_policy_t policy;
  int failed;
} run_t;

static void fail(run_t *r, const char *reason) {
  if (r->failed) return;
  r->failed = 1;
  r->t->ok = 0;
  snprintf(r->t->reason, sizeof r->t->reason, "%s", reason);
}

static void fail_errno(run_t *r, const char *what, int err) {
  char reason[200];
  snprintf(reason, sizeof reason, "%s: %s", what, strerror(err));
  fail(r, reason);
}

static void send_error(run_t *r, int code, const char *message) {
  unsigned char buf[160];
  size_t n = strlen(message);
  if (n > sizeof buf - 5) n = sizeof buf - 5;
  buf[0] = 0;
  buf[1] = 5;
  buf[2] = (unsigned char)(code >> 8);
  buf[3] = (unsigned char)code;
  memcpy(buf + 4, message, n);
  buf[4 + n] = 0;
  (void)send(r->t->sock, buf, n + 5, MSG_DONTWAIT);
}

/* Builds the packet of block `block` (= filled + 1) in its slot; 0 on success. */
static int fill(run_t *r, uint64_t block) {
  transfer_t *t = r->t;
  uint64_t off = (block - 1) * (uint64_t)t->blksize;
  uint64_t want = off >= t->size ? 0 : t->size - off;
  if (want > (uint64_t)t->blksize) want = (uint64_t)t->blksize;
  unsigned char *packet = r->slots + (size_t)(block % (uint64_t)r->nslots) * (size_t)(4 + t->blksize);
  if (want > 0 && (off < r->ra_off || off + want > r->ra_off + r->ra_len)) {
    ssize_t got;
    do got = pread(t->file, r->ra, r->ra_cap, (off_t)off);
    while (got < 0 && errno == EINTR);
    if (got < 0) return -1;
    r->ra_off = off;
    r->ra_len = (uint64_t)got;
  }
  if (want > 0 && off + want > r->ra_off + r->ra_len) {
    /* The file shrank under us: what is there is the end. */
    want = r->ra_off + r->ra_len > off ? r->ra_off + r->ra_len - off : 0;
  }
  packet[0] = 0;
  packet[1] = 3;
  packet[2] = (unsigned char)((block >> 8) & 0xff);
  packet[3] = (unsigned char)(block & 0xff);
  if (want > 0) memcpy(packet + 4, r->ra + (off - r->ra_off), (size_t)want);
  r->lens[block % (uint64_t)r->nslots] = 4 + (size_t)want;
  if (want < (uint64_t)t->blksize) r->last = block;
  t->bytes += want;
  r->filled = block;
  return 0;
}

static void drain(run_t *r) {
  uint64_t window_end = r->acked + (uint64_t)r->t->windowsize;
  while (r->next <= window_end && r->next <= r->last) {
    uint64_t block = r->next;
    if (block > r->filled && fill(r, block) != 0) {
      int err = errno;
      send_error(r, 0, "read error");
      fail_errno(r, "read error", err);
      return;
    }
    size_t slot = (size_t)(block % (uint64_t)r->nslots);
    (void)send(r->t->sock, r->slots + slot * (size_t)(4 + r->t->blksize), r->lens[slot], 0);
    if (block > r->sent) r->sent = block;
    r->next = block + 1;
  }
  if (r->filled == window_end && r->filled < r->last && fill(r, window_end + 1) != 0) {
    int err = errno;
    send_error(r, 0, "read error");
    fail_errno(r, "read error", err);
  }
}

static void progress(run_t *r, double now) {
  r->retries_left = r->t->retries;
  r->last_progress = now;
}

/* Returns 1 when the transfer is complete. */
static int on_ack(run_t *r, unsigned block16) {
  double now = now_ms();
  if (r->awaiting_oack) {
    if (block16 != 0) return 0;
    r->awaiting_oack = 0;
    progress(r, now);
    drain(r);
    return 0;
  }
  uint64_t k = r->acked + ((block16 - (unsigned)(r->acked & 0xffff)) & 0xffff);
  if (k == r->acked || k > r->sent) return 0;
  policy_acknowledged(&r->policy, k - r->acked, now);
  r->acked = k;
  if (k == r->last) return 1;
  r->next = k + 1;
  drain(r);
  progress(r, now);
  return 0;
}

static void on_timeout(run_t *r) {
  if (r->retries_left <= 0) {
    send_error(r, 0, "transfer timed out");
    fail(r, "timed out waiting for an acknowledgement");
    return;
  }
  r->retries_left -= 1;
  r->last_progress = now_ms();
  if (r->awaiting_oack) {
    (void)send(r->t->sock, r->t->oack, r->t->oack_len, 0);
    return;
  }
  r->next = r->acked + 1;
  drain(r);
}

static void *run_transfer(void *arg) {
  transfer_t *t = arg;
  run_t r;
  memset(&r, 0, sizeof r);
  r.t = t;
  r.nslots = t->windowsize + 1;
  r.slots = malloc((size_t)r.nslots * (size_t)(4 + t->blksize));
  r.lens = calloc((size_t)r.nslots, sizeof(size_t));
  r.ra_cap = READ_AHEAD > (size_t)t->blksize ? READ_AHEAD : (size_t)t->blksize;
  r.ra = malloc(r.ra_cap);
  r.last = t->size / (uint64_t)t->blksize + 1;
  r.next = 1;
  r.retries_left = t->retries;
  r.last_progress = now_ms();
  r.policy.spin_wins = 1;
  r.policy.mark_at = r.last_progress;
  r.awaiting_oack = t->oack_len > 0;
  t->ok = 1;
  unsigned char inbox[1024];

  if (!r.slots || !r.lens || !r.ra) {
    fail(&r, "out of memory");
  } else {
    /* Blocking receives with a short timeout: one system call per wait, and a bounded delay for
       aborts and retransmission timeouts. */
    int flags = fcntl(t->sock, F_GETFL);
    if (flags >= 0) (void)fcntl(t->sock, F_SETFL, flags & ~O_NONBLOCK);
    double slice_ms = t->timeout_ms < WAIT_SLICE_MS ? t->timeout_ms : WAIT_SLICE_MS;
    if (slice_ms < 1) slice_ms = 1;
    struct timeval tv = {0, (suseconds_t)(slice_ms * 1000)};
    (void)setsockopt(t->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (r.awaiting_oack) (void)send(t->sock, t->oack, t->oack_len, 0);
    else drain(&r);
  }

  while (!r.failed) {
    if (atomic_load(&t->abort_requested)) {
      send_error(&r, t->abort_code, t->abort_message);
      fail(&r, t->abort_message);
      break;
    }
    ssize_t n = -1;
    if (t->spin_us > 0 && atomic_load(&active_transfers) == 1 && policy_take_turn(&r.policy)) {
      double until = now_ms() + t->spin_us / 1000.0;
      do n = recv(t->sock, inbox, sizeof inbox, MSG_DONTWAIT);
      while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && now_ms() < until);
      if (n >= 0) {
        r.policy.misses = 0;
        t->polled += 1;
      } else {
        policy_miss(&r.policy);
      }
    }
    if (n < 0) n = recv(t->sock, inbox, sizeof inbox, 0);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      /* ECONNREFUSED (the peer's port is closed) or any other socket error ends the transfer. */
      fail_errno(&r, "socket error", errno);
      break;
    }
    if (n >= 4 && inbox[0] == 0 && inbox[1] == 4) {
      if (on_ack(&r, ((unsigned)inbox[2] << 8) | inbox[3])) {
        t->blocks = r.last;
        break;
      }
    } else if (n >= 5 && inbox[0] == 0 && inbox[1] == 5 && memchr(inbox + 4, 0, (size_t)n - 4)) {
      char reason[200];
      snprintf(reason, sizeof reason, "peer sent error %d: %.150s", (inbox[2] << 8) | inbox[3], (const char *)inbox + 4);
      fail(&r, reason);
      break;
    }
    /* Checked after every wake-up, so that duplicate ACKs or garbage cannot hold the timer off. */
    if (!r.failed && now_ms() - r.last_progress >= t->timeout_ms) on_timeout(&r);
  }
  free(r.slots);
  free(r.lens);
  free(r.ra);
  atomic_fetch_sub(&active_transfers, 1);
  /* Once queued, `t` belongs to the main thread, which may free it before the call returns. */
  napi_threadsafe_function tsfn = t->tsfn;
  napi_call_threadsafe_function(tsfn, t, napi_tsfn_blocking);
  napi_release_threadsafe_function(tsfn, napi_tsfn_release);
  return NULL;
}

/* On the main thread: reports the outcome to JavaScript, then frees the transfer. */
static void report(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  transfer_t *t = data;
  if (env && callback) {
    napi_value result, v;
    napi_create_object(env, &result);
    napi_get_boolean(env, t->ok, &v);
    napi_set_named_property(env, result, "ok", v);
    napi_create_double(env, (double)t->bytes, &v);
    napi_set_named_property(env, result, "bytes", v);
    napi_create_double(env, (double)t->blocks, &v);
    napi_set_named_property(env, result, "blocks", v);
    napi_create_double(env, (double)t->polled, &v);
    napi_set_named_property(env, result, "busyPolled", v);
    napi_create_string_utf8(env, t->reason, NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, result, "reason", v);
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_call_function(env, undefined, callback, 1, &result, NULL);
  }
  free(t->oack);
  free(t);
}

static napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static int get_int(napi_env env, napi_value v, int64_t *out) {
  return napi_get_value_int64(env, v, out) == napi_ok;
}

/* start(sockFd, fileFd, size, blksize, windowsize, timeoutMs, retries, oack, spinUs, onEnd) */
static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 10) return throw_error(env, "start: expected 10 arguments");
  int64_t sock, file, blksize, windowsize, retries, spin_us;
  double size, timeout_ms;
  if (!get_int(env, argv[0], &sock) || !get_int(env, argv[1], &file) || napi_get_value_double(env, argv[2], &size) != napi_ok ||
      !get_int(env, argv[3], &blksize) || !get_int(env, argv[4], &windowsize) || napi_get_value_double(env, argv[5], &timeout_ms) != napi_ok ||
      !get_int(env, argv[6], &retries) || !get_int(env, argv[8], &spin_us))
    return throw_error(env, "start: bad argument");
  if (sock < 0 || file < 0 || size < 0 || blksize < 8 || blksize > 65464 || windowsize < 1 || windowsize > 65535)
    return throw_error(env, "start: argument out of range");
  transfer_t *t = calloc(1, sizeof *t);
  if (!t) return throw_error(env, "start: out of memory");
  t->sock = (int)sock;
  t->file = (int)file;
  t->size = (uint64_t)size;
  t->blksize = (int)blksize;
  t->windowsize = (int)windowsize;
  t->timeout_ms = timeout_ms;
  t->retries = (int)retries;
  t->spin_us = (int)spin_us;
  napi_valuetype type;
  napi_typeof(env, argv[7], &type);
  if (type != napi_null && type != napi_undefined) {
    void *data;
    size_t len;
    if (napi_get_buffer_info(env, argv[7], &data, &len) != napi_ok) {
      free(t);
      return throw_error(env, "start: oack must be a Buffer or null");
    }
    t->oack = malloc(len ? len : 1);
    if (!t->oack) {
      free(t);
      return throw_error(env, "start: out of memory");
    }
    memcpy(t->oack, data, len);
    t->oack_len = len;
  }
  napi_value name;
  napi_create_string_utf8(env, "ironring-tftp-transfer", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[9], NULL, name, 0, 1, NULL, NULL, NULL, report, &t->tsfn) != napi_ok) {
    free(t->oack);
    free(t);
    return throw_error(env, "start: cannot create the completion callback");
  }
  atomic_fetch_add(&active_transfers, 1);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* A transfer's thread needs a few KiB of stack: keep a thousand of them cheap. */
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  int err = pthread_create(&thread, &attr, run_transfer, t);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    atomic_fetch_sub(&active_transfers, 1);
    napi_release_threadsafe_function(t->tsfn, napi_tsfn_abort);
    free(t->oack);
    free(t);
    return throw_error(env, "start: cannot start a thread");
  }
  napi_value handle;
  napi_create_external(env, t, NULL, NULL, &handle);
  return handle;
}

/* abort(handle, code, message): valid only until the transfer has reported its end. */
static napi_value abort_transfer(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 3) return throw_error(env, "abort: expected 3 arguments");
  transfer_t *t;
  int64_t code;
  if (napi_get_value_external(env, argv[0], (void **)&t) != napi_ok || !get_int(env, argv[1], &code))
    return throw_error(env, "abort: bad argument");
  size_t len;
  napi_get_value_string_utf8(env, argv[2], t->abort_message, sizeof t->abort_message, &len);
  t->abort_code = (int)code;
  atomic_store(&t->abort_requested, 1);
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "start", NAPI_AUTO_LENGTH, start, NULL, &fn);
  napi_set_named_property(env, exports, "start", fn);
  napi_create_function(env, "abort", NAPI_AUTO_LENGTH, abort_transfer, NULL, &fn);
  napi_set_named_property(env, exports, "abort", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
