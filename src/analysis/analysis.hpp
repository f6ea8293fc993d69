// SPDX-License-Identifier: Apache-2.0
// Everything a caller of the analysis needs, in one include:
//   load_trace (loader.hpp) -> TraceRows -> analyze (explain.hpp) -> Report.
#pragma once

#include "analysis/chain.hpp"
#include "analysis/explain.hpp"
#include "analysis/explain_batched.hpp"
#include "analysis/explain_steady.hpp"
#include "analysis/loader.hpp"
#include "analysis/rows.hpp"
#include "analysis/stats.hpp"
#include "analysis/units.hpp"
#include "analysis/window.hpp"
