// SPDX-License-Identifier: Apache-2.0
// The HTML report as a browser lays it out: headless chromium, in a 1280 px wide window, on a
// trace whose names are hundreds of characters long, measures the page no wider than the window,
// with the whole-window timeline's zoom widening only its own scrolling box. And the page's
// count-nouns, through the one plural helper.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "analysis_test_util.hpp"
#include "export/html_report.hpp"
#include "export/plural.hpp"
#include "html_test_fixture.hpp"
#include "shell_run.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using json = nlohmann::ordered_json;
using testing::shell;
using testing::shell_quote;
using testing::TempDir;

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";
const std::string kCsp =
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
    "style-src 'unsafe-inline'\">";

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Widths {
  long document = -1, box = -1, box_client = -1;
};

// Lays `page` out in headless chromium at 1280x900 and reads the widths back. The page runs no
// script and its policy forbids any: the copy measured here allows one inline script (the
// layout does not depend on the policy), which writes the widths into an attribute that
// --dump-dom prints. `zoom`: the timeline's zoom button to check first ("tlz1", "tlz16").
Widths measure(const std::string& page, const std::string& dir, const std::string& zoom) {
  std::string html = read_file(page);
  const size_t csp = html.find(kCsp);
  EXPECT_NE(csp, std::string::npos) << "the page's policy changed";
  if (csp == std::string::npos) return {};
  html.replace(csp, kCsp.size(),
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
               "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">");
  const size_t body_end = html.rfind("</body>");
  html.insert(body_end,
              "<script>document.getElementById('" + zoom +
                  "').checked=true;const b=document.querySelector('.tlw');"
                  "document.body.setAttribute('data-widths',"
                  "document.documentElement.scrollWidth+' '+b.scrollWidth+' '+b.clientWidth);"
                  "</script>");
  const std::string copy = dir + "/measure-" + zoom + ".html";
  std::ofstream(copy, std::ios::binary) << html;
  // Any request would go to a proxy on a closed port and fail; the page loads nothing anyway.
  const testing::ShellResult r = shell(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --proxy-server=127.0.0.1:9 "
      "--hide-scrollbars --window-size=1280,900 --dump-dom " +
      shell_quote("file://" + copy) + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  std::smatch m;
  Widths w;
  if (std::regex_search(r.out, m, std::regex(R"re(data-widths="(\d+) (\d+) (\d+)")re"))) {
    w.document = std::stol(m[1]);
    w.box = std::stol(m[2]);
    w.box_client = std::stol(m[3]);
  } else {
    ADD_FAILURE() << "chromium printed no widths: " << r.out.substr(0, 2000);
  }
  return w;
}

TEST(ExplainHtml, FitsA1280PixelWindowWithLongNames) {
  TempDir dir;
  const std::string db = dir.file("long.db");
  ASSERT_EQ(analysis::testing::make_trace_db(db, html_test::long_names_sql()), "");
  const std::string page = dir.file("report.html");
  const testing::ShellResult made = shell(kGpuwhy + " explain --db " + shell_quote(db) +
                                          " --html " + shell_quote(page) + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  const std::string html = read_file(page);
  // The long names are on the page (escaped, unbroken in the source), and so is the timeline.
  EXPECT_NE(html.find(html_test::long_name("trainer_with_a_very_long_thread_name", 300)),
            std::string::npos);
  EXPECT_NE(html.find(html_test::long_name("/home/someone/checkpoints/writer", 400)),
            std::string::npos);
  EXPECT_NE(html.find("id=\"whole-timeline\""), std::string::npos);
  EXPECT_NE(html.find("id=\"lane-3000-3000\""), std::string::npos);

  if (!testing::have_tool("chromium"))
    GTEST_SKIP() << "chromium not installed (scripts/install-export-tools)";
  const Widths one = measure(page, dir.path(), "tlz1");
  EXPECT_GT(one.document, 0);
  EXPECT_LE(one.document, 1280);
  EXPECT_LE(one.box, one.box_client + 1);  // at 1x the lanes fit their box
  // 16x: the lanes are 16 times as wide, inside their box only; the page stays as wide.
  const Widths zoomed = measure(page, dir.path(), "tlz16");
  EXPECT_LE(zoomed.document, 1280);
  EXPECT_GT(zoomed.box, 15 * zoomed.box_client);
}

TEST(Plural, CountOfSaysOneOnlyForOne) {
  EXPECT_EQ(render::count_of(0, "process", "processes"), "0 processes");
  EXPECT_EQ(render::count_of(1, "process", "processes"), "1 process");
  EXPECT_EQ(render::count_of(2, "process", "processes"), "2 processes");
  EXPECT_EQ(render::count_of(1001, "thread", "threads"), "1,001 threads");
}

// Every count on a page of ones takes the singular; none is written "(s)".
TEST(Plural, APageOfOnesSaysOneOfEach) {
  json report = {{"verdict", "v"},
                 {"clean", true},
                 {"trace",
                  {{"start_ns", 0},
                   {"calls", 1},
                   {"processes", 1},
                   {"threads", 1},
                   {"lost_events", 1},
                   {"window", {{"start_rel_ns", 0}, {"end_rel_ns", 1000}, {"duration_ns", 1000}}}}},
                 {"caveats", json::array()},
                 {"chains", json::array()},
                 {"stats", {{"ops", json::array()}, {"processes", json::array()}}}};
  json audit = {{"processes",
                 {{{"pid", 7},
                   {"comm", "p"},
                   {"gpu_busy", json::object()},
                   {"levers", json::array()},
                   {"memory",
                    {{"allocations", 1},
                     {"sites", json::array()},
                     {"reserve",
                      {{"bytes", 1},
                       {"segments", 1},
                       {"peak_bytes", 1},
                       {"peak_segments", 1},
                       {"growth", {1}},
                       {"sweeps", {1}},
                       {"site", "s"}}}}}}}}};
  const std::string html = render::explain_html(report, json::object(), audit);
  EXPECT_NE(html.find("1 GPU call, 1 process, 1 thread, 1 event lost"), std::string::npos);
  EXPECT_NE(html.find("in 1 segment at the end"), std::string::npos);
  EXPECT_NE(html.find("in 1 segment; grown at 1 step, 1 sweep;"), std::string::npos);
  EXPECT_EQ(html.find("(s)"), std::string::npos);
  EXPECT_EQ(html.find(" 1 processes"), std::string::npos);
}

}  // namespace
}  // namespace gpuwhy
