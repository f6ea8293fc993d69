// SPDX-License-Identifier: Apache-2.0
// straggler-host (budget_scenarios.hpp): the launcher starts one rank process per rank (itself,
// re-executed with --rank and --nccl-id) with GWSIM_NCCL_ASYNC=1, so that each ncclAllReduce
// returns at once and the ranks meet on the simulated GPU, as with real NCCL. Each rank prints
// its own summary line ("role":"rank"); the launcher prints the last one ("role":"launcher").
// With GWSIM_TRUTH set, rank r writes its ground truth to "<GWSIM_TRUTH>.rank<r>".
#pragma once

#include "sim_train/budget_scenarios.hpp"

namespace gw {

int run_budget_launcher(const BudgetSettings& s, int argc, char** argv);
int run_budget_rank(const BudgetSettings& s);

}  // namespace gw
