// The schema expression language: a small recursive-descent parser to an AST, evaluated in int64
// (shapes, constraints, K, cost) or in double (attr_constraints). See docs/schema-format.md.
//
//   expr    := or
//   or      := and ( "||" and )*
//   and     := cmp ( "&&" cmp )*
//   cmp     := sum [ ( "<" | "<=" | ">" | ">=" | "==" | "!=" ) sum ]     (no chaining)
//   sum     := term ( ( "+" | "-" ) term )*
//   term    := unary ( ( "*" | "/" | "%" ) unary )*
//   unary   := ( "-" | "+" | "!" ) unary | primary
//   primary := number | ident | ident "(" args ")" | "(" expr ")"
//
// Integer "/" is floor division and "%" the matching modulo (sign of the divisor), as in Python:
// -7/2 == -4, -7%2 == 1. Division by zero and int64 overflow are errors, never UB.
// && and || short-circuit, so "b != 0 && a/b > 1" is safe.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include "gauntlet/schema/schema.h"

namespace gauntlet {
namespace {

struct Node {
  enum Kind { Num, Var, Unary, Binary, Call } kind;
  std::string op;    // operator text, or function name for Call, or identifier for Var
  int64_t ival = 0;  // Num: integer value (valid when is_int)
  double dval = 0;   // Num: value as double
  bool is_int = true;
  std::vector<std::unique_ptr<Node>> kids;
  size_t pos = 0;    // offset in the source, for messages
};
using NodeP = std::unique_ptr<Node>;

struct ExprError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Parser {
 public:
  Parser(const std::string& s, bool allow_decimal) : s_(s), decimal_(allow_decimal) {}

  NodeP parse() {
    // Long operator chains make deep (left-leaning) trees; a bound on the length bounds the
    // recursion of evaluation and destruction.
    if (s_.size() > 4096) fail("expression longer than 4096 characters");
    skip();
    if (i_ >= s_.size()) fail("empty expression");
    NodeP n = parse_or();
    skip();
    if (i_ < s_.size()) fail(std::string("unexpected '") + s_[i_] + "'");
    return n;
  }

 private:
  const std::string& s_;
  bool decimal_;
  size_t i_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw ExprError(msg + " at offset " + std::to_string(i_) + " in \"" + s_ + "\"");
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    // Do not take "<" out of "<=", "=" is never a token alone, "!" not out of "!=".
    if (n == 1 && i_ + 1 < s_.size() && s_[i_ + 1] == '=' &&
        (tok[0] == '<' || tok[0] == '>' || tok[0] == '!'))
      return false;
    if (n == 1 && (tok[0] == '&' || tok[0] == '|')) return false;
    i_ += n;
    return true;
  }
  NodeP make(Node::Kind k, std::string op, size_t pos) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->op = std::move(op);
    n->pos = pos;
    return n;
  }
  NodeP binary(std::string op, NodeP a, NodeP b, size_t pos) {
    NodeP n = make(Node::Binary, std::move(op), pos);
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }

  NodeP parse_or() {
    NodeP a = parse_and();
    for (;;) {
      size_t p = i_;
      if (eat("||")) a = binary("||", std::move(a), parse_and(), p);
      else return a;
    }
  }
  NodeP parse_and() {
    NodeP a = parse_cmp();
    for (;;) {
      size_t p = i_;
      if (eat("&&")) a = binary("&&", std::move(a), parse_cmp(), p);
      else return a;
    }
  }
  bool eat_cmp(std::string* op) {
    static const char* ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    for (const char* o : ops)
      if (eat(o)) {
        *op = o;
        return true;
      }
    return false;
  }
  NodeP parse_cmp() {
    NodeP a = parse_sum();
    std::string op;
    size_t p = i_;
    if (eat_cmp(&op)) {
      a = binary(op, std::move(a), parse_sum(), p);
      std::string op2;
      if (eat_cmp(&op2)) fail("chained comparison (write a < b && b < c)");
    }
    return a;
  }
  NodeP parse_sum() {
    NodeP a = parse_term();
    for (;;) {
      size_t p = i_;
      if (eat("+")) a = binary("+", std::move(a), parse_term(), p);
      else if (eat("-")) a = binary("-", std::move(a), parse_term(), p);
      else return a;
    }
  }
  NodeP parse_term() {
    NodeP a = parse_unary();
    for (;;) {
      size_t p = i_;
      if (eat("*")) a = binary("*", std::move(a), parse_unary(), p);
      else if (eat("/")) a = binary("/", std::move(a), parse_unary(), p);
      else if (eat("%")) a = binary("%", std::move(a), parse_unary(), p);
      else return a;
    }
  }
  NodeP parse_unary() {
    // Bound the recursion (nested parentheses and unary operators) so hostile text cannot
    // overflow the stack.
    if (++depth_ > 256) fail("expression nested too deeply");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    size_t p = i_;
    for (const char* o : {"-", "+", "!"}) {
      if (eat(o)) {
        NodeP n = make(Node::Unary, o, p);
        n->kids.push_back(parse_unary());
        return n;
      }
    }
    return parse_primary();
  }
  NodeP parse_primary() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end of expression");
    size_t p = i_;
    char c = s_[i_];
    if (eat("(")) {
      NodeP n = parse_or();
      if (!eat(")")) fail("expected ')'");
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (decimal_ && c == '.')) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      std::string id = s_.substr(b, i_ - b);
      skip();
      if (i_ < s_.size() && s_[i_] == '(') {
        ++i_;
        NodeP n = make(Node::Call, id, p);
        skip();
        if (!eat(")")) {
          do n->kids.push_back(parse_or());
          while (eat(","));
          if (!eat(")")) fail("expected ')' or ',' in call of " + id + "()");
        }
        check_call(*n);
        return n;
      }
      return make(Node::Var, id, p);
    }
    fail(std::string("unexpected '") + c + "'");
  }
  void check_call(const Node& n) {
    const std::string& f = n.op;
    size_t argc = n.kids.size();
    if (f == "min" || f == "max") {
      if (argc < 2) fail(f + "() needs at least 2 arguments");
    } else if (f == "size") {
      if (argc != 2) fail("size() takes 2 arguments: size(input, dim)");
      if (n.kids[0]->kind != Node::Var) fail("size()'s first argument must be an input name");
    } else if (f == "numel" || f == "rank") {
      if (argc != 1) fail(f + "() takes 1 argument: " + f + "(input)");
      if (n.kids[0]->kind != Node::Var) fail(f + "()'s argument must be an input name");
    } else {
      fail("unknown function " + f + "() (known: min, max, size, numel, rank)");
    }
  }
  NodeP parse_number() {
    size_t b = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    bool is_int = true;
    if (decimal_) {
      if (i_ < s_.size() && s_[i_] == '.') {
        is_int = false;
        ++i_;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        is_int = false;
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
        if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad exponent");
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      }
    }
    if (i_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.'))
      fail(decimal_ ? "malformed number" : "malformed integer (only integer literals are allowed here)");
    std::string text = s_.substr(b, i_ - b);
    NodeP n = make(Node::Num, text, b);
    n->is_int = is_int;
    n->dval = std::strtod(text.c_str(), nullptr);
    if (is_int) {
      int64_t v = 0;
      for (char ch : text) {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t(ch - '0'), &v)) {
          if (decimal_) { n->is_int = false; v = 0; break; }
          i_ = b;
          fail("integer literal too large");
        }
      }
      n->ival = v;
    }
    return n;
  }
};

NodeP parse_expr(const std::string& e, bool decimal) { return Parser(e, decimal).parse(); }

// ---- int64 evaluation ----

struct IntEval {
  const std::string& src;
  const std::map<std::string, int64_t>& vars;
  const ShapeMap* shapes;

  [[noreturn]] void fail(const std::string& msg) const { throw ExprError(msg + " in \"" + src + "\""); }

  const std::vector<int64_t>& shape_of(const Node& call) const {
    const std::string& in = call.kids[0]->op;
    if (!shapes) fail(call.op + "(" + in + ", ...) needs the input shapes");
    auto it = shapes->find(in);
    if (it == shapes->end()) fail("unknown input '" + in + "' in " + call.op + "()");
    return it->second;
  }

  int64_t eval(const Node& n) const {
    switch (n.kind) {
      case Node::Num:
        return n.ival;
      case Node::Var: {
        auto it = vars.find(n.op);
        if (it == vars.end()) fail("unknown name '" + n.op + "'");
        return it->second;
      }
      case Node::Unary: {
        int64_t a = eval(*n.kids[0]);
        if (n.op == "!") return a == 0;
        if (n.op == "+") return a;
        if (a == std::numeric_limits<int64_t>::min()) fail("integer overflow in negation");
        return -a;
      }
      case Node::Binary:
        return binary(n);
      case Node::Call:
        return call(n);
    }
    fail("bad expression node");
  }

  int64_t binary(const Node& n) const {
    const std::string& op = n.op;
    if (op == "&&") return eval(*n.kids[0]) != 0 && eval(*n.kids[1]) != 0;
    if (op == "||") return eval(*n.kids[0]) != 0 || eval(*n.kids[1]) != 0;
    int64_t a = eval(*n.kids[0]);
    int64_t b = eval(*n.kids[1]);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a, b, &r)) fail("integer overflow in +");
      return r;
    }
    if (op == "-") {
      if (__builtin_sub_overflow(a, b, &r)) fail("integer overflow in -");
      return r;
    }
    if (op == "*") {
      if (__builtin_mul_overflow(a, b, &r)) fail("integer overflow in *");
      return r;
    }
    if (op == "/" || op == "%") {
      if (b == 0) fail(std::string(op == "/" ? "division" : "modulo") + " by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        if (op == "%") return 0;
        fail("integer overflow in /");
      }
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {  // round toward -inf
        q -= 1;
        m += b;
      }
      return op == "/" ? q : m;
    }
    if (op == "<") return a < b;
    if (op == "<=") return a <= b;
    if (op == ">") return a > b;
    if (op == ">=") return a >= b;
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    fail("unknown operator " + op);
  }

  int64_t call(const Node& n) const {
    if (n.op == "min" || n.op == "max") {
      int64_t r = eval(*n.kids[0]);
      for (size_t k = 1; k < n.kids.size(); ++k) {
        int64_t v = eval(*n.kids[k]);
        r = n.op == "min" ? std::min(r, v) : std::max(r, v);
      }
      return r;
    }
    const std::vector<int64_t>& shape = shape_of(n);
    int64_t rank = static_cast<int64_t>(shape.size());
    if (n.op == "rank") return rank;
    if (n.op == "numel") {
      int64_t p = 1;
      for (int64_t d : shape)
        if (__builtin_mul_overflow(p, d, &p)) fail("integer overflow in numel()");
      return p;
    }
    // size(x, d)
    int64_t d = eval(*n.kids[1]);
    int64_t nd = d < 0 ? d + rank : d;
    if (nd < 0 || nd >= rank)
      fail("size(" + n.kids[0]->op + ", " + std::to_string(d) + "): dim out of range for rank " +
           std::to_string(rank));
    return shape[static_cast<size_t>(nd)];
  }
};

// ---- double evaluation ----

struct DoubleEval {
  const std::string& src;
  const std::map<std::string, double>& vars;

  [[noreturn]] void fail(const std::string& msg) const { throw ExprError(msg + " in \"" + src + "\""); }

  double eval(const Node& n) const {
    switch (n.kind) {
      case Node::Num:
        return n.dval;
      case Node::Var: {
        auto it = vars.find(n.op);
        if (it == vars.end()) fail("unknown name '" + n.op + "'");
        return it->second;
      }
      case Node::Unary: {
        double a = eval(*n.kids[0]);
        if (n.op == "!") return a == 0 ? 1.0 : 0.0;
        return n.op == "-" ? -a : a;
      }
      case Node::Binary: {
        const std::string& op = n.op;
        if (op == "&&") return (eval(*n.kids[0]) != 0 && eval(*n.kids[1]) != 0) ? 1.0 : 0.0;
        if (op == "||") return (eval(*n.kids[0]) != 0 || eval(*n.kids[1]) != 0) ? 1.0 : 0.0;
        double a = eval(*n.kids[0]);
        double b = eval(*n.kids[1]);
        if (op == "+") return a + b;
        if (op == "-") return a - b;
        if (op == "*") return a * b;
        if (op == "/") {
          if (b == 0) fail("division by zero");
          return a / b;
        }
        if (op == "%") fail("% is not allowed in double expressions");
        if (op == "<") return a < b;
        if (op == "<=") return a <= b;
        if (op == ">") return a > b;
        if (op == ">=") return a >= b;
        if (op == "==") return a == b;
        if (op == "!=") return a != b;
        fail("unknown operator " + op);
      }
      case Node::Call: {
        if (n.op == "min" || n.op == "max") {
          double r = eval(*n.kids[0]);
          for (size_t k = 1; k < n.kids.size(); ++k) {
            double v = eval(*n.kids[k]);
            r = n.op == "min" ? std::min(r, v) : std::max(r, v);
          }
          return r;
        }
        fail(n.op + "() is not available in double expressions");
      }
    }
    fail("bad expression node");
  }
};

void collect(const Node& n, std::set<std::string>* names, std::set<std::string>* inputs) {
  if (n.kind == Node::Var) names->insert(n.op);
  if (n.kind == Node::Call && (n.op == "size" || n.op == "numel" || n.op == "rank")) {
    inputs->insert(n.kids[0]->op);
    for (size_t k = 1; k < n.kids.size(); ++k) collect(*n.kids[k], names, inputs);
    return;
  }
  for (const auto& k : n.kids) collect(*k, names, inputs);
}

}  // namespace

std::optional<int64_t> eval_expr(const std::string& e, const std::map<std::string, int64_t>& vars,
                                 const ShapeMap& shapes, std::string* error) {
  try {
    NodeP n = parse_expr(e, false);
    return IntEval{e, vars, &shapes}.eval(*n);
  } catch (const ExprError& x) {
    if (error) *error = x.what();
    return std::nullopt;
  }
}

std::optional<int64_t> eval_expr(const std::string& e, const std::map<std::string, int64_t>& vars,
                                 std::string* error) {
  try {
    NodeP n = parse_expr(e, false);
    return IntEval{e, vars, nullptr}.eval(*n);
  } catch (const ExprError& x) {
    if (error) *error = x.what();
    return std::nullopt;
  }
}

std::optional<double> eval_double_expr(const std::string& e, const std::map<std::string, double>& vars,
                                       std::string* error) {
  try {
    NodeP n = parse_expr(e, true);
    return DoubleEval{e, vars}.eval(*n);
  } catch (const ExprError& x) {
    if (error) *error = x.what();
    return std::nullopt;
  }
}

std::optional<ExprRefs> expr_refs(const std::string& e, std::string* error) {
  try {
    NodeP n = parse_expr(e, false);
    std::set<std::string> names, inputs;
    collect(*n, &names, &inputs);
    return ExprRefs{{names.begin(), names.end()}, {inputs.begin(), inputs.end()}};
  } catch (const ExprError& x) {
    if (error) *error = x.what();
    return std::nullopt;
  }
}

std::optional<std::vector<std::string>> expr_names(const std::string& e, std::string* error) {
  auto r = expr_refs(e, error);
  if (!r) return std::nullopt;
  return r->names;
}

}  // namespace gauntlet
