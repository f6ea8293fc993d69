-- SPDX-License-Identifier: Apache-2.0
-- gpuwhy trace file, schema version 2 (PRAGMA user_version = 2).
-- Timestamps (ts, *_ns) are wall-clock nanoseconds since the Unix epoch; durations are ns.
-- A process is identified by (pid, start_ns): event rows carry pid and tid and fall inside the
-- process's [start_ns, exit_ns] lifetime. See docs/schema.md for every column.

CREATE TABLE session (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  status           TEXT NOT NULL,      -- 'recording' until the agent ends cleanly, then 'complete'
  host             TEXT NOT NULL,
  kernel           TEXT NOT NULL,
  agent_version    TEXT NOT NULL,
  abi_version      INTEGER NOT NULL,
  command_line     TEXT NOT NULL,
  pid_filter       TEXT,               -- comma-separated --pid values, NULL when every process
  start_ns         INTEGER NOT NULL,
  end_ns           INTEGER,            -- NULL while recording or when the agent was killed
  last_commit_ns   INTEGER,            -- wall time of the last committed batch
  batches          INTEGER NOT NULL DEFAULT 0,  -- event batches committed so far
  last_event_ns    INTEGER,            -- latest event time (end of interval events) committed
  boot_id          TEXT,
  mono_to_wall_ns  INTEGER NOT NULL,   -- wall = monotonic + this (the one clock conversion)
  online_cpus      INTEGER             -- CPUs online on the traced host at the start (NULL: older file)
);

CREATE TABLE apis (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL,
  family    TEXT NOT NULL,   -- cudart | cuda | nccl | hip
  category  TEXT NOT NULL    -- launch | copy | memset | alloc | free | sync | stream_wait | graph | collective | group | init | device | poll | event_record
);

CREATE TABLE copy_kinds (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE syscall_names (nr INTEGER PRIMARY KEY, name TEXT NOT NULL);

CREATE TABLE libraries (
  id               INTEGER PRIMARY KEY,
  family           TEXT NOT NULL,
  path             TEXT NOT NULL,   -- as seen from the host (container paths through /proc/PID/root)
  soname           TEXT,
  version          TEXT,
  build_id         TEXT,
  dev              INTEGER NOT NULL,
  inode            INTEGER NOT NULL,
  first_seen_ns    INTEGER NOT NULL,
  seen_in_pid      INTEGER,
  probes_attached  INTEGER NOT NULL DEFAULT 0,
  probes_failed    INTEGER NOT NULL DEFAULT 0,
  UNIQUE (dev, inode)
);

-- The kernel probe families of this trace and what became of them: what evidence can exist.
CREATE TABLE probe_families (
  family TEXT PRIMARY KEY,  -- sched | proc | syscalls | block_io | tcp | reclaim
  state  TEXT NOT NULL,     -- on | off (left out with --without) | failed (could not attach)
  detail TEXT               -- why, when not on
);

CREATE TABLE lib_probes (
  lib_id        INTEGER NOT NULL,
  api_id        INTEGER NOT NULL,
  offset        INTEGER NOT NULL,   -- file offset probed
  skipped_bytes INTEGER NOT NULL,   -- bytes stepped over at entry (endbr64) to avoid single-stepping
  error         TEXT,               -- NULL when attached
  PRIMARY KEY (lib_id, api_id)
);

CREATE TABLE strings (id INTEGER PRIMARY KEY, s TEXT NOT NULL UNIQUE);  -- interned task names

CREATE TABLE processes (
  pid           INTEGER NOT NULL,
  start_ns      INTEGER NOT NULL,
  ppid          INTEGER,
  comm          TEXT,
  exe           TEXT,
  cmdline       TEXT,
  cgroup        TEXT,
  first_seen_ns INTEGER NOT NULL,
  exit_ns       INTEGER,
  exit_code     INTEGER,
  PRIMARY KEY (pid, start_ns)
);

CREATE TABLE threads (
  pid           INTEGER NOT NULL,
  tid           INTEGER NOT NULL,
  comm          TEXT,
  first_seen_ns INTEGER NOT NULL,
  exit_ns       INTEGER,
  cpus_allowed  INTEGER,           -- how many CPUs it may run on (its latest affinity); NULL: unknown
  cpus_allowed_list TEXT,          -- which, as /proc writes them ("0-3,8"); NULL: unknown
  PRIMARY KEY (tid, first_seen_ns)
);

-- ---- Chunked event tables ----------------------------------------------------------------------
-- The high-rate event tables are stored column-wise in chunks of up to 4096 rows of one thread
-- (src/store/chunk_codec.hpp): <table>_chunks below. gpuwhy presents each one as a (virtual)
-- table with the columns documented here, on every connection it opens, so `gpuwhy query` and
-- the shipped views read them as ordinary tables. A plain sqlite3 shell sees only the chunks.
--
--   -- One row per completed GPU API call.
--   CREATE TABLE api_calls (
--     ts       INTEGER NOT NULL,  -- entry
--     dur      INTEGER,           -- entry -> return; NULL: recorded at entry only (flags & 4)
--     pid      INTEGER NOT NULL,
--     tid      INTEGER NOT NULL,
--     api      INTEGER NOT NULL,  -- apis.id
--     lib      INTEGER NOT NULL,  -- libraries.id
--     ret      INTEGER,           -- return code, 0 = success; NULL: recorded at entry only
--     stream   INTEGER,
--     bytes    INTEGER,           -- copy/memset/alloc size, collective payload
--     op       INTEGER,           -- copy direction (copy_kinds.id) or NCCL reduce op
--     addr     INTEGER,           -- copy/memset dst, kernel, freed or allocated pointer, event, graph, comm
--     addr2    INTEGER,           -- copy src
--     blocks   INTEGER,           -- launch grid size in blocks
--     tpb      INTEGER,           -- launch threads per block
--     peer     INTEGER,           -- NCCL peer / root / rank
--     nranks   INTEGER,           -- NCCL communicator size (init)
--     stack_id INTEGER,
--     flags    INTEGER NOT NULL DEFAULT 0
--   );
--
--   -- One row per off-CPU interval of a traced thread.
--   CREATE TABLE offcpu (
--     ts         INTEGER NOT NULL,  -- switched out
--     dur        INTEGER NOT NULL,  -- until switched back in
--     runq       INTEGER NOT NULL,  -- part of dur spent runnable, waiting for a CPU
--     pid        INTEGER NOT NULL,
--     tid        INTEGER NOT NULL,
--     cpu        INTEGER NOT NULL,
--     preempted  INTEGER NOT NULL,  -- 1: involuntary; 0: blocked (sleep, lock, I/O)
--     state      INTEGER NOT NULL,  -- task state when switched out
--     next_pid   INTEGER,           -- what took the CPU
--     next_tid   INTEGER,
--     next_comm  INTEGER,           -- strings.id
--     waker_pid  INTEGER,           -- who woke it (blocked intervals)
--     waker_tid  INTEGER,
--     waker_comm INTEGER,           -- strings.id
--     holder_pid INTEGER,           -- had the CPU when it got it back (0: idle; NULL: not
--     holder_tid INTEGER,           --   recorded, a trace from before ABI 2)
--     holder_comm INTEGER,          -- strings.id
--     syscall    INTEGER,           -- the syscall it slept in (syscall_names.nr); NULL: none,
--                                   --   or a trace from before ABI 3
--     wait_cpu   INTEGER,           -- the CPU whose run queue it first waited in (cpu_runs);
--     migrations INTEGER,           --   moves to another queue meanwhile (wait_migrations);
--                                   --   NULL: not counted waiting, or before ABI 5
--     throttled  INTEGER,           -- 1: held off the CPU by its cgroup's CPU quota (ABI 9);
--                                   --   NULL otherwise
--     arg0       INTEGER            -- the first argument of `syscall` (a futex's address, a
--   );                              --   descriptor; ABI 9); NULL: in no syscall
--
--   CREATE TABLE syscalls (
--     ts INTEGER NOT NULL, dur INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
--     nr INTEGER NOT NULL, ret INTEGER, arg0 INTEGER
--   );
--
--   -- One row per CPU sample that found a traced thread running (trace --sample-hz).
--   CREATE TABLE cpu_samples (
--     ts INTEGER NOT NULL, dur INTEGER NOT NULL,  -- dur: the sampling period it stands for
--     pid INTEGER NOT NULL, tid INTEGER NOT NULL, cpu INTEGER NOT NULL,
--     syscall INTEGER,                            -- the syscall it was in; NULL: none
--     kernel INTEGER NOT NULL,                    -- 1: the timer interrupted kernel code
--     stack_id INTEGER,                           -- user stack (--stacks)
--     py_stack INTEGER,                           -- python_frames.py_stack_id (ABI 6); NULL: none
--     min_flt INTEGER, maj_flt INTEGER            -- the thread's page faults so far (ABI 9)
--   );
--
--   -- Who held a CPU while a traced thread waited in its run queue (ABI 5): one row per run of a
--   -- task on a CPU (switch to switch) during which some traced thread waited for that CPU.
--   -- Chunked per CPU: cpu_runs_chunks.pid and .tid hold the CPU.
--   CREATE TABLE cpu_runs (
--     ts INTEGER NOT NULL, dur INTEGER NOT NULL,  -- the run: from the CPU's previous switch
--     cpu INTEGER NOT NULL,
--     pid INTEGER NOT NULL, tid INTEGER NOT NULL, -- the task that ran (0: idle)
--     comm INTEGER                                -- strings.id: its name then
--   );
--
--   -- A traced thread waiting for a CPU moved to another CPU's run queue (ABI 5).
--   CREATE TABLE wait_migrations (
--     ts INTEGER NOT NULL, dur INTEGER NOT NULL,  -- dur: always 0
--     pid INTEGER NOT NULL, tid INTEGER NOT NULL,
--     from_cpu INTEGER NOT NULL, to_cpu INTEGER NOT NULL
--   );
--
--   CREATE TABLE block_io (
--     ts INTEGER NOT NULL, dur INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
--     dev INTEGER, sector INTEGER, bytes INTEGER, op INTEGER, error INTEGER
--   );
--

CREATE TABLE api_calls_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX api_calls_chunks_tid ON api_calls_chunks(tid, ts_min);

CREATE TABLE offcpu_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX offcpu_chunks_tid ON offcpu_chunks(tid, ts_min);

CREATE TABLE syscalls_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX syscalls_chunks_tid ON syscalls_chunks(tid, ts_min);

CREATE TABLE block_io_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX block_io_chunks_tid ON block_io_chunks(tid, ts_min);

CREATE TABLE reclaim_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX reclaim_chunks_tid ON reclaim_chunks(tid, ts_min);

-- Added after schema 2's first files: a reader skips it where a file lacks it.
CREATE TABLE cpu_samples_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX cpu_samples_chunks_tid ON cpu_samples_chunks(tid, ts_min);

-- Added with ABI 5; per CPU (pid = tid = the CPU), see cpu_runs above.
CREATE TABLE cpu_runs_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX cpu_runs_chunks_tid ON cpu_runs_chunks(tid, ts_min);

-- Added with ABI 5.
CREATE TABLE wait_migrations_chunks (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  tid     INTEGER NOT NULL,
  ts_min  INTEGER NOT NULL,   -- earliest ts of its rows
  end_max INTEGER NOT NULL,   -- latest ts + dur of its rows
  rows    INTEGER NOT NULL,
  index_crc INTEGER,          -- CRC-32 of pid, tid, ts_min, end_max, rows (chunk_index.hpp)
  data    BLOB NOT NULL       -- the encoded rows, sorted by ts
);
CREATE INDEX wait_migrations_chunks_tid ON wait_migrations_chunks(tid, ts_min);

-- ---- Per-second rollups ------------------------------------------------------------------------
-- Written with each chunk of api_calls / offcpu, in the same transaction (src/store/rollups.hpp):
-- one row per (thread, key, second) of that chunk, so a key may have several rows (one per chunk)
-- and readers sum() them. second: whole seconds since session.start_ns, (ts - start_ns) / 1e9
-- truncated as SQLite's integer division does; each event counts in the second it starts in.
-- No index: a 10 M-event trace has a few tens of thousands of rows, scanned in milliseconds.
-- A file written before they existed has neither table: readers present each as a TEMP view
-- computing the same rows from the events (sql/views/<name>.sql).

CREATE TABLE api_calls_per_second (
  pid        INTEGER NOT NULL,
  tid        INTEGER NOT NULL,
  api        INTEGER NOT NULL,  -- apis.id
  second     INTEGER NOT NULL,
  calls      INTEGER NOT NULL,
  dur_ns     INTEGER NOT NULL,  -- sum(dur)
  max_dur_ns INTEGER NOT NULL,  -- max(dur)
  bytes      INTEGER            -- sum(bytes); NULL when no call of the row has bytes
);

CREATE TABLE offcpu_per_second (
  pid        INTEGER NOT NULL,
  tid        INTEGER NOT NULL,
  second     INTEGER NOT NULL,
  preempted  INTEGER NOT NULL,  -- 1: offcpu.preempted is non-zero; 0: blocked
  other_comm INTEGER,           -- strings.id: next_comm when preempted, waker_comm when blocked
  ns         INTEGER NOT NULL,  -- sum(dur)
  runq_ns    INTEGER NOT NULL,  -- sum(runq)
  intervals  INTEGER NOT NULL   -- count(*)
);

CREATE TABLE tcp_retrans (
  ts INTEGER NOT NULL, pid INTEGER, tid INTEGER, family INTEGER,
  saddr TEXT, sport INTEGER, daddr TEXT, dport INTEGER, state INTEGER
);

CREATE TABLE reclaim (
  ts INTEGER NOT NULL, dur INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
  nr_reclaimed INTEGER
);

CREATE TABLE proc_events (
  ts        INTEGER NOT NULL,
  kind      TEXT NOT NULL,     -- exec | fork | thread | exit | thread_exit
  pid       INTEGER NOT NULL,
  tid       INTEGER NOT NULL,
  other_pid INTEGER,           -- exec: parent; fork/thread: child
  other_tid INTEGER,
  exit_code INTEGER,
  comm      TEXT,
  filename  TEXT
);

-- Every place that can lose an event counts it here (see docs/schema.md for causes).
-- The user stacks behind api_calls.stack_id (trace --stacks), resolved on the traced host while
-- the process lived: one row per frame, depth 0 the innermost (the probed function itself).
-- module/offset: the mapped file and the offset in it; symbol: the ELF function holding it
-- ("cudaLaunchKernel+0x4"); NULL where unknown (the process had exited, anonymous code, a file
-- with no symbol there). call_site: 1 on the stack's first frame outside the GPU and C/C++
-- runtime libraries (where the application called), else 0. Added after schema 2's first files.
CREATE TABLE stack_frames (
  stack_id  INTEGER NOT NULL,
  depth     INTEGER NOT NULL,
  addr      INTEGER NOT NULL,
  module    TEXT,
  offset    INTEGER,
  symbol    TEXT,
  call_site INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (stack_id, depth)
) WITHOUT ROWID;

-- The Python stacks behind api_calls.py_stack (ABI 5; on by default for Python processes, off
-- with trace --no-python), named on the traced host while the process lived: one row per frame,
-- depth 0 the innermost (the line that made the GPU call). file: co_filename; function:
-- co_qualname (3.10: co_name); line: the executing line, decoded from the code object's line
-- table; source: that line's text (whitespace-stripped), read at trace time from the file the
-- process ran (through /proc/PID/root); NULL where unknown (the process had exited or the code
-- object was gone before it was read: losses python/frame_unresolved). code_addr and instr: what
-- the probe copied (the code object's address, the instruction index). Added after schema 2's
-- first files.
CREATE TABLE python_frames (
  py_stack_id INTEGER NOT NULL,
  depth       INTEGER NOT NULL,
  pid         INTEGER NOT NULL,
  file        TEXT,
  function    TEXT,
  line        INTEGER,
  source      TEXT,
  code_addr   INTEGER NOT NULL,
  instr       INTEGER NOT NULL,
  PRIMARY KEY (py_stack_id, depth)
) WITHOUT ROWID;

-- The Python processes found among the traced ones, and whether their stacks can be walked:
-- version "3.11.7"; supported 0 with why in detail (an interpreter gpuwhy cannot walk). Added
-- after schema 2's first files.
CREATE TABLE python_processes (
  pid         INTEGER NOT NULL PRIMARY KEY,
  interpreter TEXT NOT NULL,  -- the file holding the interpreter (libpython3.11.so.1.0, python3.11)
  version     TEXT,
  supported   INTEGER NOT NULL,
  detail      TEXT,
  -- wall ns (the events' clock) once the probes had its layout: calls that began earlier carry no
  -- Python stack. NULL: not supported, or a file from before the column (2026-11-28).
  layout_ns   INTEGER,
  -- where the interpreter's state _PyRuntime lies in the process, and its size: the GIL is
  -- inside it (offcpu.arg0 of a futex wait there: a wait for the GIL). NULL: before 2026-12-01.
  runtime_addr INTEGER,
  runtime_size INTEGER
);

-- The CPU quota a traced process ran under: the tightest CFS bandwidth limit (cgroup v2 cpu.max,
-- v1 cpu.cfs_quota_us / cpu.cfs_period_us) over its cgroup and the cgroup's ancestors, as read
-- when the process was discovered. No row: no quota. Files from before 2026-12-01 lack the table.
CREATE TABLE cpu_limits (
  pid       INTEGER NOT NULL PRIMARY KEY,
  cgroup    TEXT NOT NULL,     -- the cgroup that sets it (as /proc/PID/cgroup names it)
  quota_us  INTEGER NOT NULL,  -- CPU time allowed per period, over all CPUs
  period_us INTEGER NOT NULL,
  version   INTEGER NOT NULL   -- 1 or 2: the cgroup hierarchy
);

CREATE TABLE losses (
  source TEXT NOT NULL,   -- bpf | reader | store
  cause  TEXT NOT NULL,
  count  INTEGER NOT NULL,
  PRIMARY KEY (source, cause)
);

-- Events received per source (kind), for the summary and for sanity checks.
CREATE TABLE event_counts (source TEXT PRIMARY KEY, count INTEGER NOT NULL);

-- Processes whose GPU runtime file was probed only after they had mapped it, so that their first
-- calls may be missing (docs/architecture.md, "New library files"); added after schema 2's first
-- files. cause: hold_timeout (held at the dynamic linker's hook and continued after the bound,
-- before the probes were attached), not_held (mapped at the hook but not held: a debugger's
-- tracee, or trace --no-hold), found_late (found by a scan: a process whose dynamic linker has no
-- hook, such as a container's, or a hint lost to a full ring). losses counts them per cause
-- (source 'discovery': processes, not events). at: wall ns of the attach (or of giving up).
CREATE TABLE startup_gaps (
  pid     INTEGER NOT NULL,
  cause   TEXT NOT NULL,
  library TEXT,
  at      INTEGER NOT NULL
);

-- GPU activity from the device (trace --gpu-activity): what CUPTI reported of each kernel, copy,
-- memset and synchronisation of the traced CUDA processes, through gpuwhy's CUPTI client
-- (docs/schema.md "GPU activity"). One table for every kind: the busy-time union and the
-- per-stream timelines read them together; columns a kind lacks are NULL. ts/dur: wall ns like
-- every other row (CUPTI was given the host's CLOCK_MONOTONIC as its timestamp source). Added
-- after schema 2's first files: a file without it has no GPU activity.
CREATE TABLE gpu_activity (
  kind        TEXT NOT NULL,     -- kernel | memcpy | memset | sync | overhead
  pid         INTEGER NOT NULL,
  ts          INTEGER NOT NULL,  -- start, wall ns
  dur         INTEGER NOT NULL,  -- ns
  device      INTEGER,           -- CUDA device ordinal
  context     INTEGER,           -- CUPTI context id
  stream      INTEGER,           -- CUPTI stream id
  correlation INTEGER,           -- CUPTI correlation id (ties a row to its API call)
  name_id     INTEGER,           -- kernel: gpu_kernel_names.id
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER,
  bytes       INTEGER,           -- memcpy, memset
  copy_kind   TEXT,              -- memcpy: HtoD | DtoH | DtoD | HtoH | PtoP | other
  src_kind    TEXT,              -- memcpy: pageable | pinned | device | managed | array | other
  dst_kind    TEXT,
  detail      TEXT               -- sync: its type; overhead: its kind; memset: memory kind
);

-- Kernel names of gpu_activity (untrusted text from the traced process): name demangled where
-- it demangles, mangled as CUPTI gave it.
CREATE TABLE gpu_kernel_names (
  id      INTEGER PRIMARY KEY,
  pid     INTEGER NOT NULL,
  name    TEXT NOT NULL,
  mangled TEXT NOT NULL
);
