// Text that reports share: XML/HTML escaping (markup, XML-illegal control bytes, bad UTF-8), replay commands.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gauntlet {

// `s` made safe as XML 1.0 / HTML character data or a quoted attribute value: & < > " ' become
// entities; control characters XML 1.0 forbids and invalid UTF-8 sequences become U+FFFD (kernel
// messages quote build logs and outputs, which may hold any byte, and one such byte would make the
// whole document unreadable); tab, newline and carriage return are kept (as &#10; etc. when
// `attribute` is true, so attribute values keep their line breaks through normalization).
std::string xml_escape(const std::string& s, bool attribute = false);

// `s` as one POSIX shell word: unchanged when it holds only characters no shell treats specially,
// else in single quotes (each ' written as '\''), so a pasted command runs as printed.
std::string shell_quote(const std::string& s);

// A record's field as text: a string as it is, an integer in decimal (seeds), "" when the field is
// missing or of another type. Records come from other tool versions and databases: reading one
// must never throw.
std::string json_text(const nlohmann::json& record, const char* key);

// The command that re-runs a stored failing case: `gauntlet replay PATH`.
std::string replay_command(const std::string& replay_path);

}  // namespace gauntlet
