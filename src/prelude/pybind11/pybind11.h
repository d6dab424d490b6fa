// gauntlet stand-in for <pybind11/pybind11.h>: enough of pybind11's surface for a
// PYBIND11_MODULE block written for torch.utils.cpp_extension to compile without Python.
// PYBIND11_MODULE(name, m) becomes a static function that is never called.
#pragma once
#include <cstddef>
#include <string>
#include <utility>

namespace pybind11 {

class handle {};
class object : public handle {
 public:
  object() = default;
  template <class T>
  object& operator=(T&&) {
    return *this;
  }
  template <class... A>
  object operator()(A&&...) const {
    return {};
  }
  object attr(const char*) const { return {}; }
};
class none : public object {};
class str : public object {
 public:
  str() = default;
  str(const char*) {}
  str(const std::string&) {}
};

class arg {
 public:
  constexpr explicit arg(const char* name) : name_(name) {}
  template <class T>
  arg operator=(T&&) const {
    return *this;
  }
  arg& noconvert(bool = true) { return *this; }
  arg& none(bool = true) { return *this; }
  const char* name() const { return name_; }

 private:
  const char* name_;
};
using arg_v = arg;
class kw_only {};
class pos_only {};
class doc {
 public:
  explicit doc(const char*) {}
};

enum class return_value_policy : unsigned char {
  automatic = 0,
  automatic_reference,
  take_ownership,
  copy,
  move,
  reference,
  reference_internal
};

class gil_scoped_release {};
class gil_scoped_acquire {};
template <class... T>
struct call_guard {};
template <class... T>
struct keep_alive {};

namespace detail {
template <class... A>
struct init_stub {};
}  // namespace detail
template <class... A>
detail::init_stub<A...> init() {
  return {};
}

class module_ : public object {
 public:
  module_() = default;
  explicit module_(const char*, const char* = nullptr) {}
  template <class... A>
  module_& def(const char*, A&&...) {
    return *this;
  }
  module_ def_submodule(const char*, const char* = nullptr) { return module_(); }
  std::string& doc() { return doc_; }
  template <class T>
  void add_object(const char*, T&&, bool = false) {}

 private:
  std::string doc_;
};
using module = module_;

template <class T, class... Options>
class class_ : public object {
 public:
  template <class... A>
  class_(A&&...) {}
  template <class... A>
  class_& def(A&&...) {
    return *this;
  }
  template <class... A>
  class_& def_static(A&&...) {
    return *this;
  }
  template <class... A>
  class_& def_readwrite(A&&...) {
    return *this;
  }
  template <class... A>
  class_& def_readonly(A&&...) {
    return *this;
  }
  template <class... A>
  class_& def_property(A&&...) {
    return *this;
  }
  template <class... A>
  class_& def_property_readonly(A&&...) {
    return *this;
  }
};

template <class T>
class enum_ : public object {
 public:
  template <class... A>
  enum_(A&&...) {}
  template <class... A>
  enum_& value(A&&...) {
    return *this;
  }
  enum_& export_values() { return *this; }
};

namespace literals {
inline arg operator""_a(const char* name, std::size_t) { return arg(name); }
}  // namespace literals

}  // namespace pybind11

#define GAUNTLET_PYBIND11_MODULE_IMPL(name, variable) \
  [[maybe_unused]] static void gauntlet_pybind11_module_##name(::pybind11::module_& variable)
// Extra arguments (pybind11::mod_gil_not_used(), ...) are accepted and dropped.
#define PYBIND11_MODULE(name, variable, ...) GAUNTLET_PYBIND11_MODULE_IMPL(name, variable)
