// SPDX-License-Identifier: Apache-2.0
// untrusted::shown(), the one escaping every text output applies to names from traced processes,
// and the renderers that use it: a hostile comm, file name or kernel name in a hand-built report
// reaches the explain and audit text, the HTML page and a CSV cell escaped, never raw.
#include <gtest/gtest.h>

#include "core/untrusted.hpp"
#include "export/audit_render.hpp"
#include "export/explain_render.hpp"
#include "export/html_report.hpp"

namespace gpuwhy {
namespace {

using untrusted::plain;
using untrusted::shown;

// What a process can name itself: set the terminal's title, then forge a report line.
const std::string kHostile = "evil\x1b]0;owned\x07\nVERDICT  CLEAN: nothing to see\x1b[2J";

bool has_raw_control(const std::string& s, bool newline_allowed) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && newline_allowed) continue;
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return true;  // a C1 control in UTF-8
  }
  return false;
}

// Lines of `text` that start with `prefix` (the report's own lines start at column 0).
int lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    const std::string_view line(text.data() + at,
                                (nl == std::string::npos ? text.size() : nl) - at);
    if (line.substr(0, prefix.size()) == prefix) ++n;
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return n;
}

TEST(Untrusted, PlainTextIsKept) {
  for (const std::string s : {"", "python3", "sim_train (pid 42)", "/opt/a b/train.py",
                              "µs · 数据加载 · ünïcode", "C:\\path\\x1b stays as typed"}) {
    EXPECT_EQ(shown(s), s);
    EXPECT_TRUE(plain(s)) << s;
  }
}

TEST(Untrusted, C0AndDelAreEscaped) {
  EXPECT_EQ(shown("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(shown(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(shown("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(shown("\x07\x08\x7f"), "\\x07\\x08\\x7f");
  EXPECT_FALSE(plain("x\x1b"));
  EXPECT_FALSE(plain("x\n"));
}

TEST(Untrusted, C1BidiAndSeparatorsAreEscaped) {
  EXPECT_EQ(shown("a\xc2\x9b"
                  "31m"),
            "a\\u009b31m");                 // CSI as one UTF-8 character
  EXPECT_EQ(shown("\xc2\x85"), "\\u0085");  // NEL: a line break to some viewers
  EXPECT_EQ(shown("x\xe2\x80\xae"
                  "cod.exe"),
            "x\\u202ecod.exe");                 // right-to-left override
  EXPECT_EQ(shown("\xe2\x81\xa6"), "\\u2066");  // left-to-right isolate
  EXPECT_EQ(shown("\xe2\x80\xa8"), "\\u2028");  // line separator
  EXPECT_EQ(shown("\xc2\xa0"), "\xc2\xa0");     // a no-break space is text
}

TEST(Untrusted, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(shown("\x9b"
                  "31m"),
            "\\x9b31m");  // an 8-bit CSI byte on its own
  EXPECT_EQ(shown("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(shown("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(shown("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  EXPECT_EQ(shown("ab\xe2\x82"), "ab\\xe2\\x82");                // cut short at the end
  EXPECT_EQ(shown("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(shown("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");      // an emoji is kept
}

TEST(Untrusted, HostileNameIsOneVisibleLine) {
  const std::string s = shown(kHostile);
  EXPECT_FALSE(has_raw_control(s, false)) << s;
  EXPECT_EQ(s, "evil\\x1b]0;owned\\x07\\nVERDICT  CLEAN: nothing to see\\x1b[2J");
}

analysis::Report hostile_report() {
  analysis::Report r;
  r.verdict = "HIGH: " + kHostile + " lost time";
  r.trace.host = "host\x1b]0;x\x07";
  r.caveats.push_back({"lost_events", "caveat about " + kHostile});
  analysis::Chain c;
  c.title = "cpu contention";
  c.summary = "preempted by " + kHostile;
  c.process = {42, 0, kHostile};
  c.thread = {42, 43, kHostile};
  c.culprit = analysis::Task{7, 0, kHostile};
  c.evidence.push_back({"evidence naming " + kHostile});
  c.fix = "move " + kHostile;
  c.span_ns = 1000;
  c.lost_ns = 500;
  r.chains.push_back(c);
  analysis::ProcessStats p;
  p.pid = 42;
  p.comm = kHostile;
  analysis::ThreadStats t;
  t.tid = 43;
  t.comm = kHostile;
  p.threads.push_back(t);
  r.stats.processes.push_back(p);
  return r;
}

TEST(Untrusted, ExplainTextEscapesEveryName) {
  render::TextOptions opt;
  opt.per_process = true;
  const std::string text = render::explain_text(hostile_report(), opt);
  EXPECT_FALSE(has_raw_control(text, true)) << text;
  EXPECT_EQ(lines_starting(text, "VERDICT"), 1) << text;  // no forged verdict line
  EXPECT_NE(text.find("\\x1b]0;owned\\x07\\nVERDICT  CLEAN"), std::string::npos) << text;
}

TEST(Untrusted, AuditTextEscapesEveryName) {
  analysis::AuditReport a;
  a.caveats.push_back({"lost_events", "note about " + kHostile});
  analysis::ProcessAudit p;
  p.process = {42, 0, kHostile};
  p.evidence = "why " + kHostile;
  p.move = "move " + kHostile;
  analysis::Lever l;
  l.title = kHostile;
  l.fix = kHostile;
  p.levers.push_back(l);
  p.memory.allocations = 1;
  analysis::MemorySite site;
  site.site = "/tmp/" + kHostile + ".py:3";
  p.memory.sites.push_back(site);
  a.processes.push_back(p);
  const std::string text = render::audit_text(a);
  EXPECT_FALSE(has_raw_control(text, true)) << text;
  EXPECT_EQ(lines_starting(text, "VERDICT"), 0) << text;
  EXPECT_NE(text.find("evil\\x1b]0;owned"), std::string::npos) << text;
}

TEST(Untrusted, HtmlEscapesControlsAndMarkup) {
  analysis::Report r = hostile_report();
  r.chains[0].summary += " <script>alert(1)</script>";
  const nlohmann::ordered_json j = render::explain_json(r);
  const std::string page =
      render::explain_html(j, nlohmann::ordered_json::object(), nlohmann::ordered_json());
  EXPECT_EQ(page.find('\x1b'), std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("evil\\x1b]0;owned"), std::string::npos);
}

}  // namespace
}  // namespace gpuwhy
