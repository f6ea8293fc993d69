// SPDX-License-Identifier: Apache-2.0
// spdlog and fmt (Debian 12's headers), compiled once, here. Debian ships both libraries only as
// shared objects and gpuwhy links statically, so their code has to be compiled into it; used
// header-only (SPDLOG_HEADER_ONLY, FMT_HEADER_ONLY) it was compiled again in every file that logs,
// which made those the slowest files of the build by far (docs/performance.md, "Build time").
// Every other file sees the libraries' declarations only (SPDLOG_COMPILED_LIB, set in
// CMakeLists.txt for all targets), and this file holds what spdlog's src/spdlog.cpp and
// src/color_sinks.cpp and fmt's src/format.cc would: the -inl.h implementations and the explicit
// instantiations the headers declare extern. The linker names anything missing here.
#ifndef SPDLOG_COMPILED_LIB
#error "gpuwhy builds spdlog as a compiled library: SPDLOG_COMPILED_LIB must be defined"
#endif
#ifdef FMT_HEADER_ONLY
#error "gpuwhy builds fmt as a compiled library: FMT_HEADER_ONLY must not be defined"
#endif

// ---- fmt 9 (src/format.cc)
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE

// ---- spdlog 1.10 (src/spdlog.cpp, src/color_sinks.cpp): the logger, the registry, the pattern
// formatter and the ANSI colour sinks (core/log.cpp logs to stderr through one).
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

#include <mutex>

template SPDLOG_API spdlog::logger::logger(std::string name, sinks_init_list::iterator begin,
                                           sinks_init_list::iterator end);
template class SPDLOG_API spdlog::sinks::base_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::base_sink<spdlog::details::null_mutex>;

template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_sink<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_nullmutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template class SPDLOG_API spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_nullmutex>;
template SPDLOG_API std::shared_ptr<spdlog::logger>
spdlog::stderr_color_mt<spdlog::synchronous_factory>(const std::string& logger_name,
                                                     color_mode mode);
