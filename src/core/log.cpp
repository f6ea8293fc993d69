// SPDX-License-Identifier: Apache-2.0
#include "core/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/untrusted.hpp"

namespace gpuwhy {
namespace {

// The message as untrusted::shown() writes it: log lines carry library paths, process names and
// libbpf's text, and one line stays one line that cannot drive the terminal it lands on.
class ShownPayload : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    // libbpf's debug output (-vvv) is a verifier log pages long: its own line breaks are kept
    // there, each line still escaped.
    const bool keep_lines = msg.level == spdlog::level::trace;
    size_t at = 0;
    while (true) {
      const size_t nl = keep_lines ? payload.find('\n', at) : std::string_view::npos;
      const std::string s = untrusted::shown(
          payload.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
      dest.append(s.data(), s.data() + s.size());
      if (nl == std::string_view::npos) break;
      dest.push_back('\n');
      at = nl + 1;
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<ShownPayload>();
  }
};

}  // namespace

void setup_logging(int verbosity) {
  spdlog::drop("gpuwhy");  // set up again (tests, several commands in one process): replace it
  auto logger = spdlog::stderr_color_mt("gpuwhy");
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<ShownPayload>('*').set_pattern("gpuwhy: %^%l%$: %*");
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity <= 0   ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::debug);
}

}  // namespace gpuwhy
