// SPDX-License-Identifier: Apache-2.0
// LD_PRELOAD shim for experiments only: fsync, fdatasync and syncfs return success without
// flushing anything. bench/ingest.sh runs the agent with it once to show how much of the ingest
// limit is the trace file's fsyncs (SQLite checkpoints) rather than CPU. Never use it for a trace
// you want to keep through a power loss.
int fsync(int fd) {
  (void)fd;
  return 0;
}

int fdatasync(int fd) {
  (void)fd;
  return 0;
}

int syncfs(int fd) {
  (void)fd;
  return 0;
}
