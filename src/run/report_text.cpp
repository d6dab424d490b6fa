// Text that reports share: XML/HTML escaping and replay commands (see include/gauntlet/run/report_text.h).
#include "gauntlet/run/report_text.h"

#include <cctype>
#include <cstdint>

namespace gauntlet {

namespace {

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when it is not one (overlong
// forms, surrogates and code points above U+10FFFF included).
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  // U+FFFE and U+FFFF are not XML characters either.
  if (cp == 0xFFFE || cp == 0xFFFF) return 0;
  return n;
}

}  // namespace

std::string xml_escape(const std::string& s, bool attribute) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default:
        if (static_cast<uint8_t>(c) < 0x20 || c == 0x7F) out += kReplacement;
        else out += c;
    }
    ++i;
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  if (s.empty()) return "''";
  bool plain = true;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("_./+-=:,@%").find(c) != std::string::npos))
      plain = false;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string json_text(const nlohmann::json& record, const char* key) {
  if (!record.is_object()) return "";
  auto it = record.find(key);
  if (it == record.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

std::string replay_command(const std::string& replay_path) { return "gauntlet replay " + shell_quote(replay_path); }

}  // namespace gauntlet
