/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU activity hand-off: records the CUPTI client (src/cupti_client, loaded into a CUDA
 * process through CUDA_INJECTION64_PATH) sends to the agent (src/gpu_activity).
 *
 * Transport: one AF_UNIX SOCK_DGRAM socket. `trace -- CMD` makes a socket pair and passes the
 * client's end to the command as GPUWHY_GPU_ACTIVITY_FD; a service started by the user connects
 * to the path of GPUWHY_GPU_ACTIVITY_SOCKET (the agent's `--gpu-activity-socket PATH`). Each
 * datagram holds whole records, at most GW_GA_MAX_MSG bytes; the client sends with
 * MSG_DONTWAIT | MSG_NOSIGNAL and drops (and counts) a datagram the agent has no room for, so it
 * never blocks the application.
 *
 * Rules (as for events.h): fixed-width fields only, explicit padding, explicit enum values;
 * fields are appended, never reordered or resized. A record's `size` is its whole length (a
 * multiple of 8); a reader takes the prefix it knows and skips the rest, and skips kinds it does
 * not know. Host byte order (client and agent run on one host). Bump GW_GA_VERSION on any change.
 * Times are CLOCK_MONOTONIC ns (the client gives CUPTI that clock as its timestamp source).
 */
#ifndef GPUWHY_ABI_GPU_ACTIVITY_H
#define GPUWHY_ABI_GPU_ACTIVITY_H

#include <stdint.h>

#define GW_GA_VERSION 1
#define GW_GA_MAX_MSG 16384    /* bytes per datagram at most */
#define GW_GA_MAX_NAME 4000    /* bytes of a kernel name kept (longer ones are cut) */
#define GW_GA_MAX_STATUS 1000  /* bytes of a status text */

/* Environment the agent gives the command (and a user gives a service). */
#define GW_GA_ENV_FD "GPUWHY_GPU_ACTIVITY_FD"
#define GW_GA_ENV_SOCKET "GPUWHY_GPU_ACTIVITY_SOCKET"
#define GW_GA_ENV_UNTIL "GPUWHY_GPU_ACTIVITY_UNTIL_NS" /* CLOCK_MONOTONIC ns: disable after */
#define GW_GA_ENV_CUPTI_LIB "GPUWHY_CUPTI_LIB"        /* libcupti to load instead of the usual */
#define GW_GA_ENV_BUFFER_MIB "GPUWHY_CUPTI_BUFFER_MIB" /* cap on CUPTI buffers (default 8 MiB) */

enum gw_ga_kind {
	GW_GA_HELLO = 1,    /* the client is active in this process */
	GW_GA_KERNEL = 2,   /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL */
	GW_GA_MEMCPY = 3,   /* CUPTI_ACTIVITY_KIND_MEMCPY */
	GW_GA_MEMSET = 4,   /* CUPTI_ACTIVITY_KIND_MEMSET */
	GW_GA_SYNC = 5,     /* CUPTI_ACTIVITY_KIND_SYNCHRONIZATION */
	GW_GA_OVERHEAD = 6, /* CUPTI_ACTIVITY_KIND_OVERHEAD */
	GW_GA_NAME = 7,     /* a kernel name, sent once per process before the kernels using it */
	GW_GA_DROPPED = 8,  /* cumulative counts of records the client lost */
	GW_GA_STATUS = 9,   /* the client stepped aside or failed: why (text) */
};

enum gw_ga_status_code {
	GW_GA_ST_OK = 0,
	GW_GA_ST_OTHER_SUBSCRIBER = 1, /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	GW_GA_ST_NO_CUPTI = 2,         /* libcupti could not be loaded, or lacks a function */
	GW_GA_ST_CUPTI_ERROR = 3,      /* a CUPTI call failed: activity stays off */
	GW_GA_ST_TIME_BOX = 4,         /* activity disabled at the end of --gpu-activity DURATION */
};

struct gw_ga_header {
	uint16_t kind; /* enum gw_ga_kind */
	uint16_t size; /* bytes of the whole record, header included; a multiple of 8 */
	uint32_t pid;  /* the process the record comes from */
};

struct gw_ga_hello {
	struct gw_ga_header h;
	uint32_t version;       /* GW_GA_VERSION of the client */
	uint32_t cupti_version; /* cuptiGetVersion() */
	uint32_t flags;         /* bit 0: OVERHEAD records enabled */
	uint32_t pad;
};

struct gw_ga_kernel {
	struct gw_ga_header h;
	uint64_t start_ns, end_ns;
	uint32_t device, context, stream, correlation;
	int32_t grid[3];
	int32_t block[3];
	uint32_t name_id; /* a GW_GA_NAME of the same pid; 0: unknown */
	uint32_t shared_bytes; /* static + dynamic shared memory */
	uint32_t registers;    /* per thread */
	uint32_t pad;
};

struct gw_ga_memcpy {
	struct gw_ga_header h;
	uint64_t start_ns, end_ns, bytes;
	uint32_t device, context, stream, correlation;
	uint8_t copy_kind; /* CUpti_ActivityMemcpyKind */
	uint8_t src_kind;  /* CUpti_ActivityMemoryKind */
	uint8_t dst_kind;
	uint8_t flags; /* CUpti_ActivityFlag bits (1: asynchronous) */
	uint32_t pad;
};

struct gw_ga_memset {
	struct gw_ga_header h;
	uint64_t start_ns, end_ns, bytes;
	uint32_t device, context, stream, correlation;
	uint32_t value;
	uint16_t memory_kind; /* CUpti_ActivityMemoryKind */
	uint16_t flags;
};

struct gw_ga_sync {
	struct gw_ga_header h;
	uint64_t start_ns, end_ns;
	uint32_t type; /* CUpti_ActivitySynchronizationType */
	uint32_t context, stream, correlation;
	uint32_t event_id;
	uint32_t pad;
};

struct gw_ga_overhead {
	struct gw_ga_header h;
	uint64_t start_ns, end_ns;
	uint32_t overhead_kind; /* CUpti_ActivityOverheadKind */
	uint32_t object_kind;   /* CUpti_ActivityObjectKind */
	uint32_t object_id;     /* process, thread or device id, by object_kind */
	uint32_t correlation;
};

struct gw_ga_name {
	struct gw_ga_header h;
	uint32_t name_id;
	uint32_t len; /* bytes of text that follow (no NUL); size = 16 + len rounded up to 8 */
	/* char text[len]; */
};

struct gw_ga_dropped {
	struct gw_ga_header h;
	uint64_t unsent;      /* records dropped because the agent had no room (or was gone) */
	uint64_t cupti;       /* cuptiActivityGetNumDroppedRecords: CUPTI had no buffer for them */
	uint64_t no_buffer;   /* buffer requests refused by the client's cap */
};

struct gw_ga_status {
	struct gw_ga_header h;
	uint32_t code;         /* enum gw_ga_status_code */
	int32_t cupti_result;  /* the CUptiResult behind it, 0 if none */
	uint32_t len;          /* bytes of text that follow (no NUL) */
	uint32_t pad;
	/* char text[len]; */
};

#ifdef __cplusplus
static_assert(sizeof(gw_ga_header) == 8);
static_assert(sizeof(gw_ga_hello) == 24);
static_assert(sizeof(gw_ga_kernel) == 80);
static_assert(sizeof(gw_ga_memcpy) == 56);
static_assert(sizeof(gw_ga_memset) == 56);
static_assert(sizeof(gw_ga_sync) == 48);
static_assert(sizeof(gw_ga_overhead) == 40);
static_assert(sizeof(gw_ga_name) == 16);
static_assert(sizeof(gw_ga_dropped) == 32);
static_assert(sizeof(gw_ga_status) == 24);
#else
_Static_assert(sizeof(struct gw_ga_kernel) == 80, "gw_ga_kernel");
_Static_assert(sizeof(struct gw_ga_memcpy) == 56, "gw_ga_memcpy");
_Static_assert(sizeof(struct gw_ga_dropped) == 32, "gw_ga_dropped");
#endif

#endif /* GPUWHY_ABI_GPU_ACTIVITY_H */
