// SPDX-License-Identifier: Apache-2.0
// The straggler scenario's processes. The launcher (sim_train --scenario straggler) creates the
// NCCL unique id and starts one rank process per rank (itself, re-executed with --rank and
// --nccl-id), setting GWSIM_STRAGGLE_RANK / GWSIM_STRAGGLE_MS for them unless the caller already
// has, and giving each rank its own ground-truth file, "<GWSIM_TRUTH>.rank<r>".
#pragma once

#include <string>

#include "gwsim/nccl.h"
#include "sim_train/settings.hpp"

namespace gw {

// Runs the launcher; returns the exit status (non-zero if any rank failed).
int run_launcher(const Settings& s, int argc, char** argv);

// The id as the hex string --nccl-id takes.
std::string nccl_id_hex(const ncclUniqueId& id);

// In a rank process: joins the communicator named by --nccl-id (blocks until all ranks have).
ncclComm_t join_ranks(const Settings& s);

}  // namespace gw
