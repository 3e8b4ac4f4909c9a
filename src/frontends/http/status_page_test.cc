// The status page's HTML: escaping of every outside text, the model table, the SVG charts, the
// load errors and the self-refresh.
#include "frontends/http/status_page.h"

#include <gtest/gtest.h>

#include <string>

namespace nereid {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

size_t Count(const std::string& haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

StatusPageData Sample() {
  StatusPageData data;
  data.server_id = "triton";
  data.server_version = "1.2.3";
  data.uptime = seconds(3723);
  data.now = system_clock::time_point(seconds(1'700'000'000));
  StatusPageVersion ready;
  ready.version = 1;
  ready.state = "READY";
  ready.has_stats = true;
  ready.instances = 2;
  ready.queue_depth = 3;
  ready.success = 40;
  ready.fail = 2;
  ready.inference_count = 70;
  ready.execution_count = 30;
  ready.batch_histogram = {{1, 20}, {4, 10}};
  ready.queued_requests = 40;
  ready.queue_p50_us = 12;
  ready.queue_p90_us = 900;
  ready.queue_p99_us = 2500;
  StatusPageVersion failed;
  failed.version = 2;
  failed.state = "UNAVAILABLE";
  failed.reason = "bad file";
  data.models.push_back({"simple", {ready, failed}});
  data.models.push_back({"never_loaded", {}});
  data.load_errors.push_back({"old", system_clock::time_point(seconds(1'699'999'000)), "first"});
  data.load_errors.push_back({"new", system_clock::time_point(seconds(1'699'999'999)), "second"});
  return data;
}

TEST(HtmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape(R"(<script>alert("x" & 'y')</script>)"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(HtmlEscape("plain \xC3\xA9"), "plain \xC3\xA9");  // UTF-8 passes through
  EXPECT_EQ(HtmlEscape(""), "");
}

TEST(StatusPageFormatTest, Uptime) {
  EXPECT_EQ(FormatUptime(seconds(0)), "0s");
  EXPECT_EQ(FormatUptime(seconds(59)), "59s");
  EXPECT_EQ(FormatUptime(seconds(3723)), "1h 2m 3s");
  EXPECT_EQ(FormatUptime(seconds(90061)), "1d 1h 1m 1s");
  EXPECT_EQ(FormatUptime(seconds(-5)), "0s");
}

TEST(StatusPageFormatTest, UtcTime) {
  EXPECT_EQ(FormatUtc(system_clock::time_point(seconds(1'700'000'000))), "2023-11-14T22:13:20Z");
}

TEST(StatusPageTest, IsOneSelfRefreshingDocumentWithoutExternalAssets) {
  const std::string html = RenderStatusPage(Sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find(R"(<meta http-equiv="refresh" content="5">)"), std::string::npos);
  EXPECT_EQ(Count(html, "<html"), 1u);
  EXPECT_EQ(Count(html, "</html>"), 1u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST(StatusPageTest, ShowsServerAndEveryModelVersion) {
  const std::string html = RenderStatusPage(Sample());
  EXPECT_NE(html.find("<h1>triton status</h1>"), std::string::npos);
  EXPECT_NE(html.find(R"(<span id="server-version">1.2.3</span>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span id="uptime">1h 2m 3s</span>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<span id="now">2023-11-14T22:13:20Z</span>)"), std::string::npos);
  EXPECT_EQ(Count(html, R"(<tr class="version">)"), 3u);  // two versions + the never-loaded model
  EXPECT_NE(html.find(R"(<td class="state READY">READY</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="state UNAVAILABLE">UNAVAILABLE</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="reason">bad file</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="model">never_loaded</td><td>&#8212;</td>)"), std::string::npos);
  EXPECT_NE(html.find("NOT LOADED"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="instances">2</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="queue">3</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="success">40</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="fail">2</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="inferences">70 / 30</td>)"), std::string::npos);
}

TEST(StatusPageTest, ChartsAreInlineSvg) {
  const std::string html = RenderStatusPage(Sample());
  EXPECT_EQ(Count(html, R"(<svg class="batch-histogram")"), 1u);
  EXPECT_EQ(Count(html, R"(<svg class="queue-percentiles")"), 1u);
  EXPECT_NE(html.find("<title>batch 1: 20 executions</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>batch 4: 10 executions</title>"), std::string::npos);
  EXPECT_NE(html.find("12.0 \xC2\xB5s"), std::string::npos);
  EXPECT_NE(html.find("900.0 \xC2\xB5s"), std::string::npos);
  EXPECT_NE(html.find("2.50 ms"), std::string::npos);
}

TEST(StatusPageTest, BatchHistogramBarsScaleToTheLargestCount) {
  const std::string svg = BatchHistogramSvg({{1, 100}, {2, 50}, {8, 1}});
  EXPECT_EQ(Count(svg, "<rect"), 3u);
  EXPECT_NE(svg.find(R"(height="44")"), std::string::npos);  // the largest fills the area
  EXPECT_NE(svg.find(R"(height="22")"), std::string::npos);  // half of it
  EXPECT_NE(svg.find(R"(height="1")"), std::string::npos);   // never invisible
  EXPECT_NE(BatchHistogramSvg({}).find("no executions"), std::string::npos);
}

TEST(StatusPageTest, QueuePercentileBarsScaleToTheLargest) {
  const std::string svg = QueuePercentilesSvg(10, 10, 40, 80);
  EXPECT_NE(svg.find("<title>queue time percentiles of 10 requests</title>"), std::string::npos);
  EXPECT_NE(svg.find(R"(width="10" height="12")"), std::string::npos);
  EXPECT_NE(svg.find(R"(width="40" height="12")"), std::string::npos);
  EXPECT_NE(svg.find(R"(width="80" height="12")"), std::string::npos);
  const std::string none = QueuePercentilesSvg(0, 0, 0, 0);
  EXPECT_NE(none.find("no requests"), std::string::npos);
  EXPECT_EQ(none.find("<rect"), std::string::npos);
}

TEST(StatusPageTest, LoadErrorsNewestFirst) {
  const std::string html = RenderStatusPage(Sample());
  EXPECT_EQ(Count(html, R"(<tr class="load-error">)"), 2u);
  const size_t newer = html.find(R"(<td class="model">new</td>)");
  const size_t older = html.find(R"(<td class="model">old</td>)");
  ASSERT_NE(newer, std::string::npos);
  ASSERT_NE(older, std::string::npos);
  EXPECT_LT(newer, older);
  EXPECT_NE(html.find(R"(<td class="time">2023-11-14T22:13:19Z</td>)"), std::string::npos);
  EXPECT_NE(html.find(R"(<td class="time">2023-11-14T21:56:40Z</td>)"), std::string::npos);
}

TEST(StatusPageTest, EmptyServer) {
  StatusPageData data;
  data.server_id = "triton";
  const std::string html = RenderStatusPage(data);
  EXPECT_NE(html.find(R"(<p id="no-models">)"), std::string::npos);
  EXPECT_NE(html.find(R"(<p id="no-load-errors">)"), std::string::npos);
}

TEST(StatusPageTest, HostileTextsAreEscapedEverywhere) {
  StatusPageData data = Sample();
  const std::string evil = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>";
  data.server_id = evil;
  data.server_version = evil;
  data.models[0].name = evil;
  data.models[0].versions[1].reason = evil;
  data.models[0].versions[1].state = evil;
  data.load_errors[0].model = evil;
  data.load_errors[0].reason = evil;
  const std::string html = RenderStatusPage(data);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("'x'"), std::string::npos);
  EXPECT_GE(Count(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), 9u);
}

}  // namespace
}  // namespace nereid
