// SPDX-License-Identifier: Apache-2.0
// Visibility of the simulator's exported C entry points. The libraries build with hidden
// visibility so that only the runtime's real names (and the gwsim_* helpers) are exported;
// a linker version script then gives them the real libraries' symbol versions.
#pragma once

#if defined(GWSIM_EXPORTS)
#define GWSIM_API __attribute__((visibility("default")))
#else
#define GWSIM_API
#endif
