// The schema expression language (src/schema/expr.cpp).
#include <gtest/gtest.h>

#include "gauntlet/schema/schema.h"

using namespace gauntlet;

namespace {

int64_t ev(const std::string& e, const std::map<std::string, int64_t>& vars = {}) {
  std::string err;
  auto v = eval_expr(e, vars, &err);
  EXPECT_TRUE(v.has_value()) << e << ": " << err;
  return v.value_or(-999999);
}

std::string fails(const std::string& e, const std::map<std::string, int64_t>& vars = {}, const ShapeMap& shapes = {}) {
  std::string err;
  auto v = eval_expr(e, vars, shapes, &err);
  EXPECT_FALSE(v.has_value()) << e << " gave " << v.value_or(0);
  EXPECT_FALSE(err.empty()) << e;
  return err;
}

}  // namespace

TEST(Expr, LiteralsAndPrecedence) {
  EXPECT_EQ(ev("42"), 42);
  EXPECT_EQ(ev("1 + 2 * 3"), 7);
  EXPECT_EQ(ev("(1 + 2) * 3"), 9);
  EXPECT_EQ(ev("10 - 4 - 3"), 3);   // left associative
  EXPECT_EQ(ev("100 / 10 / 5"), 2);
  EXPECT_EQ(ev("2 * 3 % 4"), 2);    // (2*3)%4
  EXPECT_EQ(ev("-2 * 3"), -6);
  EXPECT_EQ(ev("- -5"), 5);
  EXPECT_EQ(ev("-(2 + 3) * 2"), -10);
  EXPECT_EQ(ev("1 + 2 < 4"), 1);    // arithmetic binds tighter than comparison
  EXPECT_EQ(ev("1 < 2 && 3 < 2"), 0);
  EXPECT_EQ(ev("1 < 2 || 3 < 2"), 1);
  EXPECT_EQ(ev("0 || 1 && 0"), 0);  // && binds tighter than ||
  EXPECT_EQ(ev("1 || 0 && 0"), 1);
  EXPECT_EQ(ev("!0 + 1"), 2);
  EXPECT_EQ(ev("3 != 3"), 0);
  EXPECT_EQ(ev("3 == 3"), 1);
  EXPECT_EQ(ev("3 >= 4"), 0);
  EXPECT_EQ(ev("3 <= 3"), 1);
  EXPECT_EQ(ev("3 > 2"), 1);
}

TEST(Expr, FloorDivisionAndModuloOfNegatives) {
  EXPECT_EQ(ev("7 / 2"), 3);
  EXPECT_EQ(ev("-7 / 2"), -4);
  EXPECT_EQ(ev("7 / -2"), -4);
  EXPECT_EQ(ev("-7 / -2"), 3);
  EXPECT_EQ(ev("-8 / 2"), -4);
  EXPECT_EQ(ev("-7 % 2"), 1);
  EXPECT_EQ(ev("7 % -2"), -1);
  EXPECT_EQ(ev("-7 % -2"), -1);
  EXPECT_EQ(ev("-6 % 3"), 0);
  // conv2d's output extent with padding: (H + 2*p - KH)/stride + 1
  EXPECT_EQ(ev("(H+2*padding-KH)/stride+1", {{"H", 5}, {"padding", 1}, {"KH", 3}, {"stride", 2}}), 3);
  EXPECT_EQ(ev("(H+2*padding-KH)/stride+1", {{"H", 2}, {"padding", 0}, {"KH", 5}, {"stride", 2}}), -1);
}

TEST(Expr, DivisionByZeroIsAnError) {
  EXPECT_NE(fails("1 / 0").find("division by zero"), std::string::npos);
  EXPECT_NE(fails("1 % (2 - 2)").find("modulo by zero"), std::string::npos);
  EXPECT_NE(fails("N / M", {{"N", 4}, {"M", 0}}).find("division by zero"), std::string::npos);
  // Short-circuit: the guarded division is never evaluated.
  EXPECT_EQ(ev("M != 0 && N / M > 1", {{"N", 4}, {"M", 0}}), 0);
  EXPECT_EQ(ev("M == 0 || N / M > 1", {{"N", 4}, {"M", 0}}), 1);
}

TEST(Expr, OverflowIsAnError) {
  fails("9223372036854775807 + 1");
  fails("4294967296 * 4294967296");
  fails("99999999999999999999");
  fails("(0 - 9223372036854775807 - 1) / -1");
  EXPECT_EQ(ev("9223372036854775807"), INT64_MAX);
}

TEST(Expr, MinMaxAndNames) {
  EXPECT_EQ(ev("min(3, 5)"), 3);
  EXPECT_EQ(ev("max(3, 5)"), 5);
  EXPECT_EQ(ev("max(1, 2, 7, 4)"), 7);
  EXPECT_EQ(ev("min(N, 8) * elem_size", {{"N", 5}, {"elem_size", 2}}), 10);
  EXPECT_EQ(ev("max(-N, N)", {{"N", 3}}), 3);
  EXPECT_EQ(ev("causal", {{"causal", 1}}), 1);
  EXPECT_EQ(ev("  2*M*N*K ", {{"M", 2}, {"N", 3}, {"K", 4}}), 48);
}

TEST(Expr, UnknownNameIsAnError) {
  std::string err = fails("M * Q", {{"M", 2}});
  EXPECT_NE(err.find("unknown name 'Q'"), std::string::npos) << err;
  err = fails("foo(1)");
  EXPECT_NE(err.find("unknown function"), std::string::npos) << err;
}

TEST(Expr, SyntaxErrors) {
  for (const char* bad : {"", "   ", "1 +", "(1", "1)", "1 2", "a b", "1 < 2 < 3", "min(1)", "2 ** 3", "1 & 2",
                          "1 | 2", "1.5", "1e3", "3x", "size(x)", "size(1, 0)", "numel()", "max(1,)", "#"}) {
    std::string err;
    EXPECT_FALSE(eval_expr(bad, {{"a", 1}, {"b", 2}}, &err).has_value()) << bad;
    EXPECT_FALSE(err.empty()) << bad;
    EXPECT_FALSE(expr_names(bad, &err).has_value()) << bad;
  }
}

TEST(Expr, DeepNestingIsAnErrorNotAStackOverflow) {
  EXPECT_EQ(ev(std::string(100, '(') + "7" + std::string(100, ')')), 7);
  fails(std::string(100000, '(') + "1" + std::string(100000, ')'));
  fails(std::string(100000, '-') + "1");
  std::string chain = "1";
  for (int i = 0; i < 50000; ++i) chain += "+1";
  fails(chain);
}

TEST(Expr, SizeNumelRank) {
  ShapeMap shapes = {{"x", {3, 5, 7}}, {"w", {4}}};
  std::string err;
  auto size = [&](const std::string& e, int64_t dim) {
    return eval_expr(e, {{"dim", dim}}, shapes, &err);
  };
  EXPECT_EQ(size("size(x,dim)", -1).value_or(-1), 7);
  EXPECT_EQ(size("size(x, dim)", 0).value_or(-1), 3);
  EXPECT_EQ(size("size(x,dim)", 1).value_or(-1), 5);
  EXPECT_EQ(size("size(x,dim)", -3).value_or(-1), 3);
  EXPECT_EQ(size("size(x, 2) * size(w, 0)", 0).value_or(-1), 28);
  EXPECT_EQ(size("numel(x) / max(size(x,dim), 1)", -1).value_or(-1), 15);
  EXPECT_EQ(size("rank(x) + rank(w)", 0).value_or(-1), 4);
  EXPECT_FALSE(size("size(x,dim)", 3).has_value());
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  EXPECT_FALSE(size("size(x,dim)", -4).has_value());
  EXPECT_FALSE(size("size(y,dim)", 0).has_value());
  EXPECT_NE(err.find("unknown input 'y'"), std::string::npos) << err;
  // Without shapes, size() is an error, not a crash.
  EXPECT_FALSE(eval_expr("size(x,dim)", {{"dim", 0}}, &err).has_value());
  EXPECT_NE(err.find("needs the input shapes"), std::string::npos) << err;
  // numel of a zero-size input, and an empty shape (0-d) has numel 1.
  EXPECT_EQ(eval_expr("numel(z) + numel(s)", {}, {{"z", {4, 0}}, {"s", {}}}, &err).value_or(-1), 1);
}

TEST(Expr, RefsSeparateNamesFromInputs) {
  std::string err;
  auto r = expr_refs("size(x, dim) * N + numel(w) + max(M, elem_size)", &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->names, (std::vector<std::string>{"M", "N", "dim", "elem_size"}));
  EXPECT_EQ(r->inputs, (std::vector<std::string>{"w", "x"}));
  auto n = expr_names("B*B + min(B, C)", &err);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, (std::vector<std::string>{"B", "C"}));
}

TEST(Expr, DoubleExpressions) {
  std::string err;
  EXPECT_EQ(eval_double_expr("lo <= hi", {{"lo", -0.5}, {"hi", 0.5}}, &err).value_or(-1), 1.0);
  EXPECT_EQ(eval_double_expr("lo <= hi", {{"lo", 0.75}, {"hi", 0.5}}, &err).value_or(-1), 0.0);
  EXPECT_DOUBLE_EQ(eval_double_expr("eps * 1e5 + 0.5", {{"eps", 1e-5}}, &err).value_or(-1), 1.5);
  EXPECT_DOUBLE_EQ(eval_double_expr("7 / 2", {}, &err).value_or(-1), 3.5);  // true division
  EXPECT_DOUBLE_EQ(eval_double_expr("max(-1.5, .25)", {}, &err).value_or(-1), 0.25);
  EXPECT_FALSE(eval_double_expr("1 / 0", {}, &err).has_value());
  EXPECT_FALSE(eval_double_expr("lo < hy", {{"lo", 1}}, &err).has_value());
  EXPECT_NE(err.find("unknown name 'hy'"), std::string::npos) << err;
  EXPECT_FALSE(eval_double_expr("7 % 2", {}, &err).has_value());
  EXPECT_FALSE(eval_double_expr("size(x, 0)", {}, &err).has_value());
}
