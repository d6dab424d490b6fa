// HOSTILE (sandbox containment): opens an AF_INET socket and connects to 127.0.0.1:9. The seccomp
// filter forbids sockets and kills the child. Expected: every gate reports error/crash. (If the
// socket were merely refused, the kernel would go on and return a correct relu.)
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

torch::Tensor forward(const torch::Tensor& x) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(9);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    (void)rc;
    ::close(s);
  }
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(in[i]);
      o[i] = (std::isnan(v) || v > 0.0f) ? in[i] : scalar_t(0.0f);
    }
  });
  return out;
}
