#!/usr/bin/env bash
# Installs gauntlet's build and test dependencies from Debian 12's packages (run as root).
set -euo pipefail
packages=(
  g++ cmake make pkg-config
  libtorch-dev              # LibTorch 1.13 (CPU): tensors, the oracle, and kernels' ABI
  libboost-dev              # Boost.Multiprecision (exact accumulation oracle)
  nlohmann-json3-dev        # schemas, manifests, reports, replay files
  libcli11-dev              # command line
  librapidcheck-dev         # property-based case generation
  libgtest-dev              # tests
  libsqlite3-dev            # audit results
  libssl-dev                # sha256 (kernel hashes, build cache keys)
  libseccomp-dev            # the sandbox's system-call filter
  python3-torch             # Python modules (docs/modules.md): the Python worker and its tests
  python3-seccomp           # the Python worker's system-call filter
  ninja-build pybind11-dev python3-dev  # CPU load_inline modules: torch.utils.cpp_extension builds (docs/modules.md, "Builds")
  chromium                  # renders the HTML report in its test (headless; the plots must draw)
  libxml2-utils             # xmllint: the JUnit test checks the XML with libxml2 too
  slurm-wlm munge           # the one-node Slurm CI check of sharded audits (tools/slurm/ci-one-node.sh)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "dependencies installed"
