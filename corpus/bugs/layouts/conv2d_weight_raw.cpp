// PLANTED BUG (layouts): conv2d makes x contiguous (it may arrive as a slice of a larger
// activation) but reads the weight and bias through data_ptr() in [O, C, KH, KW] order as stored
// ("parameters are always contiguous"). A transposed, channels-last, sliced or expanded weight, or
// a sliced bias, is read in the wrong order or through its gaps; contiguous parameters are right.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

// Rounds a double to scalar_t exactly once, round-to-nearest-even. For float this is the plain
// conversion. For Half/BFloat16 a plain static_cast would round twice (double -> float -> 16 bit);
// instead the double is first rounded to float with round-to-odd (truncate, then set the last bit
// when inexact), which makes the final float -> 16-bit RNE conversion the correct rounding of d.
template <typename T>
inline T round_out(double d) {
  if constexpr (std::is_same<T, double>::value) {
    return d;
  } else if constexpr (std::is_same<T, float>::value) {
    return static_cast<float>(d);
  } else {
    float f = static_cast<float>(d);
    if (std::isfinite(d) && static_cast<double>(f) != d) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      u |= 1u;
      std::memcpy(&f, &u, sizeof f);
    }
    return static_cast<T>(f);
  }
}

// Error-free summation (Knuth's TwoSum): s + c carries about twice double's precision, so sums
// and dot products of float32/float16/bfloat16 terms come out essentially exact before the one
// final rounding. Non-finite terms: the plain running sum s holds the IEEE answer (inf, NaN).
struct Acc {
  double s = 0.0;
  double c = 0.0;
  inline void add(double x) {
    const double t = s + x;
    const double bp = t - s;
    c += (s - (t - bp)) + (x - bp);
    s = t;
  }
  inline double value() const { return std::isfinite(s) ? s + c : s; }
};

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

inline void check_same_dtype(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "all floating inputs must have the same dtype");
}

// Validates dim against [-rank, rank) (rank >= 1) and wraps negative dims.
inline int64_t wrap_dim(int64_t dim, int64_t rank) {
  TORCH_CHECK(rank >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -rank && dim < rank, "dim out of range");
  return dim < 0 ? dim + rank : dim;
}

// Splits a contiguous shape around `d`: [outer, K, inner].
struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};
inline Split split_at(at::IntArrayRef sizes, int64_t d) {
  Split s;
  for (int64_t i = 0; i < d; ++i) s.outer *= sizes[i];
  s.K = sizes[d];
  for (int64_t i = d + 1; i < static_cast<int64_t>(sizes.size()); ++i) s.inner *= sizes[i];
  return s;
}

}  // namespace

// conv2d(x[N,C,H,W], w[O,C,KH,KW], b[O], stride, padding) = F.conv2d(x, w, b, stride, padding)
// (dilation 1, groups 1, zero padding on all four sides). Exact products in double, each output's
// terms plus bias summed error-free, rounded once. Padding positions take part as explicit zero
// terms (0 * w), as the im2col + GEMM reference does, so a non-finite weight meeting padding
// gives NaN there exactly like the reference.
torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                      int64_t stride, int64_t padding) {
  check_float_cpu(x);
  check_float_cpu(w);
  check_float_cpu(b);
  check_same_dtype(x, w);
  check_same_dtype(x, b);
  TORCH_CHECK(x.dim() == 4, "conv2d: x must be 4-D [N, C, H, W]");
  TORCH_CHECK(w.dim() == 4, "conv2d: w must be 4-D [O, C, KH, KW]");
  TORCH_CHECK(b.dim() == 1, "conv2d: b must be 1-D [O]");
  TORCH_CHECK(x.size(1) == w.size(1), "conv2d: x and w disagree on the channel count C");
  TORCH_CHECK(b.size(0) == w.size(0), "conv2d: b length differs from O");
  TORCH_CHECK(stride >= 1, "conv2d: stride must be at least 1");
  TORCH_CHECK(padding >= 0, "conv2d: padding must be non-negative");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), KH = w.size(2), KW = w.size(3);
  TORCH_CHECK(KH >= 1 && KW >= 1, "conv2d: kernel height and width must be at least 1");
  TORCH_CHECK(O >= 1 && C >= 1, "conv2d: output and input channel counts must be at least 1");
  TORCH_CHECK(H + 2 * padding >= KH && W + 2 * padding >= KW,
              "conv2d: kernel larger than the padded input");
  const int64_t HO = (H + 2 * padding - KH) / stride + 1;
  const int64_t WO = (W + 2 * padding - KW) / stride + 1;
  const torch::Tensor xc = x.contiguous();
  // Parameters are allocated once, contiguous: no copy needed.
  const torch::Tensor& wc = w;
  const torch::Tensor& bc = b;
  torch::Tensor out = torch::empty({N, O, HO, WO}, xc.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "conv2d_weight_raw", [&] {
    const scalar_t* px = xc.data_ptr<scalar_t>();
    const scalar_t* pw = wc.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    std::vector<double> wd(static_cast<size_t>(O * C * KH * KW));
    for (size_t t = 0; t < wd.size(); ++t) wd[t] = static_cast<double>(pw[t]);
    std::vector<double> xd(static_cast<size_t>(C * H * W));
    for (int64_t n = 0; n < N; ++n) {
      for (size_t t = 0; t < xd.size(); ++t) xd[t] = static_cast<double>(px[n * C * H * W + t]);
      for (int64_t oc = 0; oc < O; ++oc) {
        const double* wo = wd.data() + oc * C * KH * KW;
        for (int64_t oh = 0; oh < HO; ++oh) {
          for (int64_t ow = 0; ow < WO; ++ow) {
            Acc acc;
            for (int64_t c = 0; c < C; ++c) {
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = oh * stride - padding + kh;
                const bool row_in = ih >= 0 && ih < H;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t iw = ow * stride - padding + kw;
                  const double xv = (row_in && iw >= 0 && iw < W) ? xd[(c * H + ih) * W + iw] : 0.0;
                  acc.add(xv * wo[(c * KH + kh) * KW + kw]);
                }
              }
            }
            acc.add(static_cast<double>(pb[oc]));
            o[((n * O + oc) * HO + oh) * WO + ow] = round_out<scalar_t>(acc.value());
          }
        }
      }
    }
  });
  return out;
}
