/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuwhy's CUPTI client: loaded into a CUDA process by the driver through CUDA_INJECTION64_PATH
 * (the driver calls InitializeInjection from cuInit), it turns CUPTI activity records (kernels,
 * copies, memsets, synchronisations, CUPTI's own overhead) into the compact records of
 * include/gpuwhy/abi/gpu_activity.h and sends them to the agent over a datagram socket.
 *
 * Safe by construction: libcupti is dlopen()ed (GPUWHY_CUPTI_LIB, else the usual library path,
 * else the toolkit's folders), nothing is linked; if it is missing, if another CUPTI subscriber
 * is there (the PyTorch profiler, nsys) or if any CUPTI call fails, the client says so once on
 * stderr and to the agent, and leaves the process alone. Sending never blocks (MSG_DONTWAIT):
 * a datagram the agent has no room for is dropped and counted. CUPTI's buffers are capped
 * (GPUWHY_CUPTI_BUFFER_MIB, 8 MiB by default); a request past the cap is refused and CUPTI
 * counts the records it dropped. Plain C, libc and libdl only: it runs inside any process.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpuwhy/abi/gpu_activity.h"

#define GW_EXPORT __attribute__((visibility("default")))

#define BUFFER_BYTES (1u << 20)
#define NAME_SLOTS 8192

/* The CUPTI functions used, resolved with dlsym. */
static struct {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**);
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t*);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*get_version)(uint32_t*);
  CUptiResult (*result_string)(CUptiResult, const char**);
} cu;

static int g_fd = -1;
static int g_active;   /* CUPTI activity is on */
static int g_overhead; /* OVERHEAD is among the kinds enabled */
static uint32_t g_pid;
static pthread_mutex_t g_send_mu = PTHREAD_MUTEX_INITIALIZER; /* the message and the names */
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_unsent, g_cupti_dropped, g_no_buffer; /* under g_send_mu (g_no_buffer: pool) */
static size_t g_buffers_max, g_buffers_out;
static void* g_free_buffers[64];
static size_t g_free_count;
static CUpti_SubscriberHandle g_subscriber;

/* Kernel names by CUPTI's name pointer (shared by every record of one kernel). */
struct name_slot {
  const char* key;
  uint32_t id;
  int sent; /* 1: the agent has it; 2: in the message being built */
};
static struct name_slot g_names[NAME_SLOTS];
static uint32_t g_next_name_id = 1;

/* The datagram being built (under g_send_mu). */
static _Alignas(8) uint8_t g_msg[GW_GA_MAX_MSG];
static size_t g_msg_len;
static uint32_t g_msg_records;
/* The names in it: marked sent once it is (a name record takes at least 24 bytes). */
static struct name_slot* g_msg_names[GW_GA_MAX_MSG / 24 + 1];
static size_t g_msg_name_count;

static const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD};
#define KIND_COUNT (sizeof(kKinds) / sizeof(kKinds[0]))

static uint64_t CUPTIAPI monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char* result_text(CUptiResult r) {
  const char* s = NULL;
  if (cu.result_string && cu.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

/* Sends the message built so far; on failure its records are counted as unsent and its names
 * are marked unsent again (they go with the next kernel that needs them). */
static void flush_msg_locked(void) {
  if (g_msg_len == 0) return;
  int ok = 0;
  if (g_fd >= 0) {
    ssize_t n;
    do n = send(g_fd, g_msg, g_msg_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    ok = n == (ssize_t)g_msg_len;
    /* The agent is gone (or was never there): stop trying, keep counting. */
    if (!ok && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
      close(g_fd);
      g_fd = -1;
    }
  }
  for (size_t i = 0; i < g_msg_name_count; ++i) g_msg_names[i]->sent = ok ? 1 : 0;
  g_msg_name_count = 0;
  if (!ok) g_unsent += g_msg_records;
  g_msg_len = 0;
  g_msg_records = 0;
}

/* Room for `size` bytes in the message (sending it first when full). */
static void* reserve_locked(size_t size, uint16_t kind, int counts) {
  if (g_msg_len + size > sizeof(g_msg)) flush_msg_locked();
  struct gw_ga_header* h = (struct gw_ga_header*)(g_msg + g_msg_len);
  memset(h, 0, size);
  h->kind = kind;
  h->size = (uint16_t)size;
  h->pid = g_pid;
  g_msg_len += size;
  if (counts) ++g_msg_records;
  return h;
}

static void send_text_locked(uint16_t kind, uint32_t code, int32_t result, const char* text) {
  size_t len = strlen(text);
  if (len > GW_GA_MAX_STATUS) len = GW_GA_MAX_STATUS;
  const size_t size = (sizeof(struct gw_ga_status) + len + 7) & ~(size_t)7;
  struct gw_ga_status* s = reserve_locked(size, kind, 0);
  s->code = code;
  s->cupti_result = result;
  s->len = (uint32_t)len;
  memcpy(s + 1, text, len);
}

/* One line on stderr and a status record for the agent; the process runs on untouched. */
static void step_aside(uint32_t code, CUptiResult r, const char* fmt, ...) {
  char text[GW_GA_MAX_STATUS + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpuwhy: GPU activity off in pid %u: %s\n", (unsigned)g_pid, text);
  pthread_mutex_lock(&g_send_mu);
  send_text_locked(GW_GA_STATUS, code, (int32_t)r, text);
  flush_msg_locked();
  pthread_mutex_unlock(&g_send_mu);
}

/* The name id of a kernel, adding its name to the message the first time. */
static uint32_t name_id_locked(const char* name) {
  if (name == NULL) return 0;
  uintptr_t h = (uintptr_t)name;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15ull;
  for (size_t probe = 0; probe < NAME_SLOTS; ++probe) {
    struct name_slot* s = &g_names[(h + probe) % NAME_SLOTS];
    if (s->key == NULL) {
      s->key = name;
      s->id = g_next_name_id++;
      s->sent = 0;
    }
    if (s->key != name) continue;
    if (s->sent == 0) {
      size_t len = strlen(name);
      if (len > GW_GA_MAX_NAME) len = GW_GA_MAX_NAME;
      const size_t size = (sizeof(struct gw_ga_name) + len + 7) & ~(size_t)7;
      /* The name and its kernel record go in one datagram. */
      if (g_msg_len + size + sizeof(struct gw_ga_kernel) > sizeof(g_msg)) flush_msg_locked();
      struct gw_ga_name* n = reserve_locked(size, GW_GA_NAME, 0);
      n->name_id = s->id;
      n->len = (uint32_t)len;
      memcpy(n + 1, name, len);
      s->sent = 2;
      g_msg_names[g_msg_name_count++] = s;
    }
    return s->id;
  }
  return 0; /* the table is full: the kernel goes without its name */
}

static void convert_locked(const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*)rec;
      const uint32_t name = name_id_locked(k->name);
      struct gw_ga_kernel* o = reserve_locked(sizeof *o, GW_GA_KERNEL, 1);
      o->start_ns = k->start;
      o->end_ns = k->end;
      o->device = k->deviceId;
      o->context = k->contextId;
      o->stream = k->streamId;
      o->correlation = k->correlationId;
      o->grid[0] = k->gridX;
      o->grid[1] = k->gridY;
      o->grid[2] = k->gridZ;
      o->block[0] = k->blockX;
      o->block[1] = k->blockY;
      o->block[2] = k->blockZ;
      o->name_id = name;
      o->shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
      o->registers = k->registersPerThread;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6* m = (const CUpti_ActivityMemcpy6*)rec;
      struct gw_ga_memcpy* o = reserve_locked(sizeof *o, GW_GA_MEMCPY, 1);
      o->start_ns = m->start;
      o->end_ns = m->end;
      o->bytes = m->bytes;
      o->device = m->deviceId;
      o->context = m->contextId;
      o->stream = m->streamId;
      o->correlation = m->correlationId;
      o->copy_kind = m->copyKind;
      o->src_kind = m->srcKind;
      o->dst_kind = m->dstKind;
      o->flags = m->flags;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4* m = (const CUpti_ActivityMemset4*)rec;
      struct gw_ga_memset* o = reserve_locked(sizeof *o, GW_GA_MEMSET, 1);
      o->start_ns = m->start;
      o->end_ns = m->end;
      o->bytes = m->bytes;
      o->device = m->deviceId;
      o->context = m->contextId;
      o->stream = m->streamId;
      o->correlation = m->correlationId;
      o->value = m->value;
      o->memory_kind = m->memoryKind;
      o->flags = m->flags;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const CUpti_ActivitySynchronization2* s = (const CUpti_ActivitySynchronization2*)rec;
      struct gw_ga_sync* o = reserve_locked(sizeof *o, GW_GA_SYNC, 1);
      o->start_ns = s->start;
      o->end_ns = s->end;
      o->type = (uint32_t)s->type;
      o->context = s->contextId;
      o->stream = s->streamId;
      o->correlation = s->correlationId;
      o->event_id = s->cudaEventId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const CUpti_ActivityOverhead3* v = (const CUpti_ActivityOverhead3*)rec;
      struct gw_ga_overhead* o = reserve_locked(sizeof *o, GW_GA_OVERHEAD, 1);
      o->start_ns = v->start;
      o->end_ns = v->end;
      o->overhead_kind = (uint32_t)v->overheadKind;
      o->object_kind = (uint32_t)v->objectKind;
      o->object_id = v->objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE ? v->objectId.dcs.deviceId
                                                                   : v->objectId.pt.threadId;
      o->correlation = v->correlationId;
      break;
    }
    default:
      break;
  }
}

static void send_dropped_locked(void) {
  struct gw_ga_dropped* d = reserve_locked(sizeof *d, GW_GA_DROPPED, 0);
  d->unsent = g_unsent;
  d->cupti = g_cupti_dropped;
  pthread_mutex_lock(&g_pool_mu);
  d->no_buffer = g_no_buffer;
  pthread_mutex_unlock(&g_pool_mu);
}

static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* b = NULL;
  pthread_mutex_lock(&g_pool_mu);
  if (g_free_count > 0) {
    b = g_free_buffers[--g_free_count];
    ++g_buffers_out;
  } else if (g_buffers_out < g_buffers_max) {
    if (posix_memalign(&b, 8, BUFFER_BYTES) == 0)
      ++g_buffers_out;
    else
      b = NULL;
  }
  if (b == NULL) ++g_no_buffer;
  pthread_mutex_unlock(&g_pool_mu);
  *buffer = (uint8_t*)b;
  *size = b ? BUFFER_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                      size_t valid) {
  (void)size;
  pthread_mutex_lock(&g_send_mu);
  CUpti_Activity* rec = NULL;
  if (buffer != NULL)
    while (cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) convert_locked(rec);
  size_t dropped = 0;
  if (cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS) g_cupti_dropped += dropped;
  if (g_unsent || g_cupti_dropped || g_no_buffer) send_dropped_locked();
  flush_msg_locked();
  pthread_mutex_unlock(&g_send_mu);
  if (buffer == NULL) return;
  pthread_mutex_lock(&g_pool_mu);
  --g_buffers_out;
  if (g_free_count < sizeof(g_free_buffers) / sizeof(g_free_buffers[0]))
    g_free_buffers[g_free_count++] = buffer;
  else
    free(buffer);
  pthread_mutex_unlock(&g_pool_mu);
}

/* Subscribed for CUPTI's one-subscriber rule only: no callback domain is enabled. */
static void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const void* data) {
  (void)user;
  (void)domain;
  (void)id;
  (void)data;
}

static void flush_at_exit(void) {
  if (!g_active) return;
  cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&g_send_mu);
  send_dropped_locked();
  flush_msg_locked();
  pthread_mutex_unlock(&g_send_mu);
}

/* trace --gpu-activity DURATION: activity goes off at the deadline (a thread sleeping until it). */
static void* time_box(void* arg) {
  const uint64_t until = *(const uint64_t*)arg;
  free(arg);
  struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
  for (size_t i = 0; i < KIND_COUNT; ++i)
    if (kKinds[i] != CUPTI_ACTIVITY_KIND_OVERHEAD || g_overhead) cu.disable(kKinds[i]);
  cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&g_send_mu);
  send_text_locked(GW_GA_STATUS, GW_GA_ST_TIME_BOX, 0, "the --gpu-activity time box ended");
  send_dropped_locked();
  flush_msg_locked();
  pthread_mutex_unlock(&g_send_mu);
  return NULL;
}

static int open_channel(void) {
  const char* fd = getenv(GW_GA_ENV_FD);
  if (fd && *fd) {
    char* end = NULL;
    const long v = strtol(fd, &end, 10);
    int type = 0, domain = 0;
    socklen_t len = sizeof type, dlen = sizeof domain;
    /* Only the agent's kind of socket: an fd number reused for something else is left alone. */
    if (*end == '\0' && v >= 0 && v < 1 << 20 &&
        getsockopt((int)v, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM &&
        getsockopt((int)v, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_UNIX)
      return (int)v;
    return -1;
  }
  const char* path = getenv(GW_GA_ENV_SOCKET);
  if (path && *path) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path) return -1;
    strcpy(a.sun_path, path);
    const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
      close(s);
      return -1;
    }
    return s;
  }
  return -1;
}

static void* load_cupti(char* why, size_t why_len) {
  const char* env = getenv(GW_GA_ENV_CUPTI_LIB);
  const char* candidates[] = {env && *env ? env : NULL,
                              "libcupti.so.13",
                              "libcupti.so",
                              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                              "/usr/local/cuda/lib64/libcupti.so.13",
                              "/usr/local/cuda/lib/libcupti.so.13"};
  why[0] = '\0';
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
    if (candidates[i] == NULL) continue;
    void* h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    if (why[0] == '\0') snprintf(why, why_len, "%s", dlerror());
    if (i == 0) return NULL; /* an explicit library that fails is not replaced by another */
  }
  return NULL;
}

#define RESOLVE(field, sym)                                       \
  do {                                                            \
    *(void**)(&cu.field) = dlsym(lib, sym);                       \
    if (cu.field == NULL) {                                       \
      step_aside(GW_GA_ST_NO_CUPTI, 0, "libcupti lacks %s", sym); \
      return 1;                                                   \
    }                                                             \
  } while (0)

GW_EXPORT int InitializeInjection(void) {
  static int done;
  if (__atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST)) return 1;
  g_pid = (uint32_t)getpid();
  g_fd = open_channel();
  char why[512];
  void* lib = load_cupti(why, sizeof why);
  if (lib == NULL) {
    step_aside(GW_GA_ST_NO_CUPTI, 0, "cannot load libcupti (%s); set %s to its path", why,
               GW_GA_ENV_CUPTI_LIB);
    return 1;
  }
  RESOLVE(result_string, "cuptiGetResultString");
  RESOLVE(subscribe, "cuptiSubscribe");
  RESOLVE(unsubscribe, "cuptiUnsubscribe");
  RESOLVE(enable, "cuptiActivityEnable");
  RESOLVE(disable, "cuptiActivityDisable");
  RESOLVE(register_callbacks, "cuptiActivityRegisterCallbacks");
  RESOLVE(register_timestamp, "cuptiActivityRegisterTimestampCallback");
  RESOLVE(next_record, "cuptiActivityGetNextRecord");
  RESOLVE(dropped, "cuptiActivityGetNumDroppedRecords");
  RESOLVE(flush_all, "cuptiActivityFlushAll");
  RESOLVE(get_version, "cuptiGetVersion");

  size_t mib = 8;
  const char* m = getenv(GW_GA_ENV_BUFFER_MIB);
  if (m && *m) {
    const long v = strtol(m, NULL, 10);
    if (v >= 1 && v <= 64) mib = (size_t)v;
  }
  g_buffers_max = mib * (1u << 20) / BUFFER_BYTES;

  CUptiResult r = cu.subscribe(&g_subscriber, on_callback, NULL);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    step_aside(GW_GA_ST_OTHER_SUBSCRIBER, r,
               "another CUPTI subscriber is present (a profiler such as the PyTorch profiler "
               "or nsys): stepping aside, the job runs untouched");
    return 1;
  }
  if (r != CUPTI_SUCCESS) {
    step_aside(GW_GA_ST_CUPTI_ERROR, r, "cuptiSubscribe failed: %s", result_text(r));
    return 1;
  }
  /* The timestamp source first: CUPTI requires it before any kind is enabled. */
  if ((r = cu.register_timestamp(monotonic_ns)) != CUPTI_SUCCESS ||
      (r = cu.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
    step_aside(GW_GA_ST_CUPTI_ERROR, r, "CUPTI set-up failed: %s", result_text(r));
    cu.unsubscribe(g_subscriber);
    return 1;
  }
  for (size_t i = 0; i < KIND_COUNT; ++i) {
    r = cu.enable(kKinds[i]);
    if (r == CUPTI_SUCCESS) {
      if (kKinds[i] == CUPTI_ACTIVITY_KIND_OVERHEAD) g_overhead = 1;
      continue;
    }
    if (kKinds[i] == CUPTI_ACTIVITY_KIND_OVERHEAD) continue; /* optional */
    for (size_t j = 0; j < i; ++j) cu.disable(kKinds[j]);
    step_aside(GW_GA_ST_CUPTI_ERROR, r, "cuptiActivityEnable(%d) failed: %s", (int)kKinds[i],
               result_text(r));
    cu.unsubscribe(g_subscriber);
    return 1;
  }
  g_active = 1;
  atexit(flush_at_exit);
  uint32_t version = 0;
  cu.get_version(&version);
  pthread_mutex_lock(&g_send_mu);
  struct gw_ga_hello* h = reserve_locked(sizeof *h, GW_GA_HELLO, 0);
  h->version = GW_GA_VERSION;
  h->cupti_version = version;
  h->flags = g_overhead ? 1u : 0u;
  flush_msg_locked();
  pthread_mutex_unlock(&g_send_mu);

  const char* until = getenv(GW_GA_ENV_UNTIL);
  if (until && *until) {
    uint64_t* arg = malloc(sizeof *arg);
    if (arg) {
      *arg = strtoull(until, NULL, 10);
      pthread_t t;
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      if (pthread_create(&t, &attr, time_box, arg) != 0) free(arg);
      pthread_attr_destroy(&attr);
    }
  }
  return 1;
}
