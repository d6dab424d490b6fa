// The HTML report's inline stylesheet and plotting script (html_report_assets.cpp).
#pragma once

namespace gauntlet::html_assets {

extern const char* const kStyle;   // CSS for the page, the plots and the table
// Draws every <svg class="plot" data-plot=KIND> from the JSON in <script id="gauntlet-summary">,
// marks each with data-drawn="N" (the bars drawn), and wires the table's filters.
extern const char* const kScript;

}  // namespace gauntlet::html_assets
