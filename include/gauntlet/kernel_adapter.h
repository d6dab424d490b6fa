// Adapter compiled into every built kernel: calls an entry function of any SPEC form with KernelArgs.
// The builder's generated wrapper includes the kernel source, then this header, and exports
// gauntlet_entries_v1() whose invoke functions are gauntlet::detail::invoke_entry(&ENTRY, ...).
#pragma once
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gauntlet/kernel_abi.h"

namespace gauntlet {
namespace detail {

// ---- parameter kinds ---------------------------------------------------------------------------

template <class P>
struct ParamInfo {
  using D = std::remove_cv_t<std::remove_reference_t<P>>;
  static constexpr bool is_tensor = std::is_same_v<D, at::Tensor>;
  static constexpr bool is_bool = std::is_same_v<D, bool>;
  static constexpr bool is_int = std::is_integral_v<D> && !is_bool;
  static constexpr bool is_float = std::is_floating_point_v<D>;
  static constexpr bool supported = is_tensor || is_bool || is_int || is_float;
  static constexpr const char* token() {
    return is_tensor ? "T" : is_bool ? "b" : is_int ? "i64" : is_float ? "f64" : "?";
  }
  static constexpr KernelArg::Kind kind() {
    return is_tensor ? KernelArg::Kind::Tensor
           : is_bool ? KernelArg::Kind::Bool
           : is_int  ? KernelArg::Kind::Int
                     : KernelArg::Kind::Double;
  }
};

// ---- result kinds ------------------------------------------------------------------------------

template <class R>
struct ResultInfo {
  static constexpr bool supported = false;
  static constexpr bool single = false;
  static void collect(const R&, std::vector<at::Tensor>*) {}
};
template <>
struct ResultInfo<at::Tensor> {
  static constexpr bool supported = true;
  static constexpr bool single = true;
  static void collect(const at::Tensor& t, std::vector<at::Tensor>* out) { out->push_back(t); }
};
template <>
struct ResultInfo<std::vector<at::Tensor>> {
  static constexpr bool supported = true;
  static constexpr bool single = false;
  static void collect(const std::vector<at::Tensor>& v, std::vector<at::Tensor>* out) {
    out->insert(out->end(), v.begin(), v.end());
  }
};
template <class... Ts>
struct ResultInfo<std::tuple<Ts...>> {
  static constexpr bool supported =
      sizeof...(Ts) > 0 && (ResultInfo<std::remove_cv_t<std::remove_reference_t<Ts>>>::supported && ...);
  static constexpr bool single = false;
  static void collect(const std::tuple<Ts...>& t, std::vector<at::Tensor>* out) {
    std::apply(
        [out](const auto&... e) {
          (ResultInfo<std::remove_cv_t<std::remove_reference_t<decltype(e)>>>::collect(e, out), ...);
        },
        t);
  }
};
template <class A, class B>
struct ResultInfo<std::pair<A, B>> {
  using RA = ResultInfo<std::remove_cv_t<std::remove_reference_t<A>>>;
  using RB = ResultInfo<std::remove_cv_t<std::remove_reference_t<B>>>;
  static constexpr bool supported = RA::supported && RB::supported;
  static constexpr bool single = false;
  static void collect(const std::pair<A, B>& p, std::vector<at::Tensor>* out) {
    RA::collect(p.first, out);
    RB::collect(p.second, out);
  }
};

// ---- function traits ---------------------------------------------------------------------------

template <class F>
struct FnTraits;
template <class R, class... A>
struct FnTraits<R (*)(A...)> {
  using Plain = R (*)(A...);
  using Ret = std::remove_cv_t<std::remove_reference_t<R>>;
  using Args = std::tuple<A...>;
  static constexpr std::size_t arity = sizeof...(A);
  static constexpr bool params_supported = (ParamInfo<A>::supported && ... && true);
  static constexpr bool result_supported = ResultInfo<Ret>::supported;
  static std::string params() {
    std::string s;
    ((s += (s.empty() ? "" : ","), s += ParamInfo<A>::token()), ...);
    return s;
  }
  static bool kinds_match(const std::vector<KernelArg>& args) {
    std::size_t i = 0;
    return ((args[i++].kind == ParamInfo<A>::kind()) && ... && true);
  }
};
template <class R, class... A>
struct FnTraits<R (*)(A...) noexcept> : FnTraits<R (*)(A...)> {};

// "T,i64->T": parameter kinds, then the result (T one tensor, T* several, ? unsupported).
template <class F>
const char* entry_signature() {
  using Tr = FnTraits<F>;
  static const std::string sig = Tr::params() + "->" +
                                 (ResultInfo<typename Tr::Ret>::supported
                                      ? (ResultInfo<typename Tr::Ret>::single ? "T" : "T*")
                                      : "?");
  return sig.c_str();
}
template <class F>
const char* entry_signature(F) {
  return entry_signature<F>();
}

inline const char* kind_token(KernelArg::Kind k) {
  switch (k) {
    case KernelArg::Kind::Tensor: return "T";
    case KernelArg::Kind::Int: return "i64";
    case KernelArg::Kind::Double: return "f64";
    case KernelArg::Kind::Bool: return "b";
  }
  return "?";
}

inline std::string given_signature(const std::vector<KernelArg>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ",";
    s += kind_token(a.kind);
  }
  return s;
}

// First meaningful line of an exception message, without LibTorch's appended C++ backtrace.
inline std::string first_message_line(const char* what) {
  std::string s = what ? what : "";
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t nl = s.find('\n', pos);
    std::string line = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    std::size_t b = 0, e = line.size();
    while (b < e && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(line[e - 1]))) --e;
    line = line.substr(b, e - b);
    bool backtrace = line.rfind("Exception raised from", 0) == 0 || line.rfind("frame #", 0) == 0 ||
                     line.find("(most recent call first)") != std::string::npos;
    if (!line.empty() && !backtrace) return line;
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return "(no message)";
}

inline bool message_says_oom(const char* what) {
  std::string s = what ? what : "";
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.find("can't allocate memory") != std::string::npos ||
         s.find("out of memory") != std::string::npos;
}

// ---- argument conversion -----------------------------------------------------------------------

template <class D>
bool int_fits(int64_t v) {
  if constexpr (std::is_signed_v<D>) {
    return v >= static_cast<int64_t>(std::numeric_limits<D>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<D>::max());
  } else {
    return v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<D>::max());
  }
}

template <class A>
bool arg_in_range(const KernelArg& a) {
  using D = typename ParamInfo<A>::D;
  if constexpr (ParamInfo<A>::is_int) return int_fits<D>(a.i);
  return true;
}

template <class A>
std::remove_cv_t<std::remove_reference_t<A>> convert_arg(const KernelArg& a) {
  using D = typename ParamInfo<A>::D;
  if constexpr (ParamInfo<A>::is_tensor) return a.tensor;
  else if constexpr (ParamInfo<A>::is_bool) return a.b;
  else if constexpr (ParamInfo<A>::is_int) return static_cast<D>(a.i);
  else return static_cast<D>(a.d);
}

template <class R, class... A, std::size_t... I>
int call_entry(R (*fn)(A...), const std::vector<KernelArg>& args, std::vector<at::Tensor>* outputs,
               std::index_sequence<I...>) {
  std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...> vals{convert_arg<A>(args[I])...};
  using Ret = std::remove_cv_t<std::remove_reference_t<R>>;
  const Ret& result = fn(std::forward<A>(std::get<I>(vals))...);
  ResultInfo<Ret>::collect(result, outputs);
  return kCallOk;
}

template <class A>
bool check_ranges_one(const std::vector<KernelArg>& args, std::size_t i, std::string* error) {
  if (arg_in_range<A>(args[i])) return true;
  if (error) {
    *error = "bad arguments: argument " + std::to_string(i + 1) + " (" + std::to_string(args[i].i) +
             ") does not fit the entry's integer parameter type";
  }
  return false;
}
template <class R, class... A, std::size_t... I>
bool check_ranges(R (*)(A...), const std::vector<KernelArg>& args, std::string* error,
                  std::index_sequence<I...>) {
  return (check_ranges_one<A>(args, I, error) && ... && true);
}

// Calls `fn` with `args` (SPEC order: tensors, then attributes), appends its tensors to `outputs`.
// Never throws; returns a KernelCallCode and sets *error on failure.
template <class F>
int invoke_entry(F fn, const std::vector<KernelArg>* args, std::vector<at::Tensor>* outputs,
                 std::string* error) noexcept {
  using Tr = FnTraits<F>;
  try {
    if (error) error->clear();
    if (!args || !outputs) {
      if (error) *error = "bad arguments: null args or outputs";
      return kCallBadArguments;
    }
    outputs->clear();
    if constexpr (!Tr::params_supported || !Tr::result_supported) {
      if (error) {
        *error = std::string("bad arguments: the entry's C++ signature (") + entry_signature<F>() +
                 ") has a parameter or result type gauntlet cannot pass (? marks it)";
      }
      return kCallBadArguments;
    } else {
      if (args->size() != Tr::arity || !Tr::kinds_match(*args)) {
        if (error) {
          *error = "bad arguments: the entry takes (" + Tr::params() + ") but was given (" +
                   given_signature(*args) + ")";
        }
        return kCallBadArguments;
      }
      typename Tr::Plain plain = fn;  // a noexcept function converts to the plain pointer type
      if (!check_ranges(plain, *args, error, std::make_index_sequence<Tr::arity>{})) {
        return kCallBadArguments;
      }
      return call_entry(plain, *args, outputs, std::make_index_sequence<Tr::arity>{});
    }
  } catch (const std::bad_alloc& e) {
    if (outputs) outputs->clear();
    if (error) *error = std::string("out of memory: ") + first_message_line(e.what());
    return kCallOutOfMemory;
  } catch (const c10::Error& e) {
    if (outputs) outputs->clear();
    bool oom = message_says_oom(e.what());
    if (error) *error = (oom ? "out of memory: " : "") + first_message_line(e.what_without_backtrace());
    return oom ? kCallOutOfMemory : kCallException;
  } catch (const std::exception& e) {
    if (outputs) outputs->clear();
    if (error) *error = first_message_line(e.what());
    return kCallException;
  } catch (...) {
    if (outputs) outputs->clear();
    if (error) *error = "unknown exception (not derived from std::exception)";
    return kCallException;
  }
}

}  // namespace detail
}  // namespace gauntlet
