// Path, string and clock helpers of the kernel builder (src/build only).
#pragma once
#include <string>
#include <vector>

namespace gauntlet::build_internal {

double now_s();  // steady clock, seconds
std::string getenv_str(const char* name);  // "" when unset
std::string strip_slashes(std::string s);  // trailing '/' removed
std::string dirname_of(const std::string& p);
bool is_file(const std::string& p);
bool is_dir(const std::string& p);
std::string absolute_path(const std::string& p);  // realpath, else p made absolute
std::vector<std::string> split(const std::string& s, char sep);  // empty pieces dropped
std::vector<std::string> split_words(const std::string& s);
std::string join(const std::vector<std::string>& v, const std::string& sep);
bool ends_with(const std::string& s, const std::string& suffix);
void remove_tree(const std::string& path);  // rm -rf, best effort

}  // namespace gauntlet::build_internal
