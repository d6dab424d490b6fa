#!/usr/bin/env python3
"""What one fresh CUDA context costs a gauntlet child, under each context-creation setting.

A gauntlet CUDA child is forked from a zygote that already loaded LibTorch, then starts CUDA
(cuInit, the primary context, torch's first allocation and kernel) and, at the end, exits (the
context's teardown). This bench does the same: torch is imported once, N children are forked,
released at once, and each starts CUDA under one setting (environment variables, which the driver
reads at cuInit / context creation, or primary-context flags) and exits. The driver creates
contexts one after another, so the wall time of N at once divided by N is the serial cost per
context, teardown included: the floor under one fresh context per (kernel, gate).

usage: ctx_settings_bench.py [N] [SETTING ...]   (default N=16, every setting)
CTX_ROUNDS=R (default 1): every setting measured R times, the settings taking turns round by round,
and priced at its fastest round. One burst is noisy: the same H100 measured 0.266 s and then 0.210
s a context minutes apart (thirty-ninth session), and a batch priced at the slow one ran at 108% of
its "ceiling". The fastest round is the least the driver has been seen to need, so the ceiling it
gives is the most demanding one the machine supports.
prints a markdown table, then `serial_seconds_per_context=S` (LAZY, the driver's default hardware
queues: the determinism and timing gates' children) and `serial_seconds_per_context_one_queue=S`
(LAZY and one hardware queue: every other gate's children), the units of the throughput ceiling.
"""
import ctypes
import os
import re
import statistics
import sys
import time

try:
    import torch
except ImportError:  # the self-test runs where no torch is (CI); the bench itself needs it
    torch = None

SETTINGS = {
    # What gauntlet's children get (sandbox: CUDA_MODULE_LOADING=LAZY; the determinism and timing
    # gates keep the driver's default hardware queues, the others get one: gates/registry.cpp).
    "gauntlet (LAZY)": {"CUDA_MODULE_LOADING": "LAZY"},
    "EAGER module loading": {"CUDA_MODULE_LOADING": "EAGER"},
    "LAZY + 1 hardware queue": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1"},
    "LAZY + 2 hardware queues": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "2"},
    "LAZY + 32 hardware queues": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "32"},
    "LAZY + lazy module data": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_MODULE_DATA_LOADING": "LAZY"},
    "LAZY + blocking sync": {"CUDA_MODULE_LOADING": "LAZY", "@flags": 0x04},  # CU_CTX_SCHED_BLOCKING_SYNC
    "LAZY + spin": {"CUDA_MODULE_LOADING": "LAZY", "@flags": 0x01},  # CU_CTX_SCHED_SPIN
    "LAZY + 1 queue + lazy data": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                    "CUDA_MODULE_DATA_LOADING": "LAZY"},
    # What a gauntlet child does besides the context, one piece at a time (issue 18: which of them
    # the kernel or the driver serializes across processes). "@unshare": namespaces made in the
    # timed part, as the zygote's clone makes them (needs root); "@pinned": bytes of pinned host
    # memory after the first kernel, as the worker's staging buffer.
    "LAZY + 1 queue + network namespace": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                           "@unshare": 0x40000000},  # CLONE_NEWNET
    "LAZY + 1 queue + net, ipc, mount namespaces": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                                    "@unshare": 0x40000000 | 0x08000000 | 0x00020000},
    "LAZY + 1 queue + 4 MiB pinned": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                      "@pinned": 4 << 20},
    # What the contexts of a real run have around them (issue 18, thirty-first session: the gates'
    # children create contexts ~45% slower than this bench's idle GPU predicts). "@device_mib": each
    # child fills that much device memory (a worker's cache: poison blocks plus 64 MiB of slack),
    # mapped at creation and unmapped at teardown; "@busy": another process keeps the GPU busy the
    # whole time with ~0.5 ms kernels, each synchronized, as the gates' cases do in their turns.
    # "@kernels": that many distinct ATen kernels run after the first (each a lazy module load).
    "LAZY + 1 queue + 12 more ATen kernels": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                              "@kernels": 12},
    "LAZY + 1 queue + 128 MiB device memory": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                               "@device_mib": 128},
    "LAZY + 1 queue beside a busy GPU": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                         "@busy": True},
    "gauntlet (LAZY) beside a busy GPU": {"CUDA_MODULE_LOADING": "LAZY", "@busy": True},
    # Contexts that stay alive meanwhile (thirty-third session: the timeline showed the driver
    # creating contexts most of a run's wall, each slower the more children are alive at once).
    # "@live": (N, queues) holder processes, each with a context of that many hardware queues (0:
    # the driver's default) and a little device memory, idle through the burst, as children waiting
    # for their turn or their parent are. If a context's creation costs more beside more live
    # contexts, fewer children alive at once (not more slots) is what lowers a run's serial cost.
    "LAZY + 1 queue beside 8 live 1-queue contexts": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                                      "@live": (8, 1)},
    "LAZY + 1 queue beside 24 live 1-queue contexts": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                                       "@live": (24, 1)},
    "LAZY + 1 queue beside 24 live 2-queue contexts": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                                       "@live": (24, 2)},
    "LAZY + 1 queue beside 8 live default-queue contexts": {"CUDA_MODULE_LOADING": "LAZY",
                                                            "CUDA_DEVICE_MAX_CONNECTIONS": "1", "@live": (8, 0)},
    "LAZY + 1 queue beside 24 live default-queue contexts": {"CUDA_MODULE_LOADING": "LAZY",
                                                             "CUDA_DEVICE_MAX_CONNECTIONS": "1", "@live": (24, 0)},
    # A busy host (thirty-fourth session: in a run a one-queue context costs ~30% more than here,
    # with the host's CPUs 54-58% busy; the driver's creation is partly host work). "@cpu_busy": that
    # many processes spin on the CPU (no CUDA) the whole time.
    "LAZY + 1 queue beside 8 busy CPUs": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                          "@cpu_busy": 8},
    "LAZY + 1 queue beside 16 busy CPUs": {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                           "@cpu_busy": 16},
}


def apply_setting(setting):
    """In a forked child before CUDA starts: its namespaces (@unshare) and environment; an error
    message when the namespaces could not be made, else None."""
    if "@unshare" in setting:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(setting["@unshare"]) != 0:
            return f"unshare failed: errno {ctypes.get_errno()}"
    for k, v in setting.items():
        if not k.startswith("@"):
            os.environ[k] = v
    return None


def child(go_r, out_w, setting):
    os.read(go_r, 1)
    t0 = time.monotonic()
    failed = apply_setting(setting)
    if failed:
        os.write(out_w, f"{failed}\n".encode())
        os._exit(2)
    if "@flags" in setting:
        cuda = ctypes.CDLL("libcuda.so.1")
        cuda.cuInit(0)
        cuda.cuDevicePrimaryCtxSetFlags_v2(0, setting["@flags"])
    torch.cuda.init()
    t1 = time.monotonic()
    x = torch.ones(1 << 18, device="cuda")  # first allocation and a first kernel (a fill)
    y = (x * 2).sum().item()
    if "@device_mib" in setting:
        torch.empty(setting["@device_mib"] << 20, dtype=torch.uint8, device="cuda").fill_(0xA5)
        torch.cuda.synchronize()
    if "@pinned" in setting:
        staging = torch.empty(setting["@pinned"], dtype=torch.uint8, pin_memory=True)
        staging[:1].copy_(x[:1].to(torch.uint8), non_blocking=False)
    if "@kernels" in setting:
        # Distinct ATen kernels, each loaded on its first launch under lazy loading (a module
        # load in the driver): what a child's cases add when they run ATen's copies and fills.
        ops = [lambda t: t.add(1), lambda t: t.mul(3), torch.sin, torch.exp, lambda t: t.cumsum(0),
               lambda t: torch.sort(t)[0], lambda t: t.clamp(0, 1), torch.sqrt, lambda t: t.to(torch.float16),
               lambda t: t.t().contiguous() if t.dim() == 2 else t.flip(0), torch.isnan, lambda t: t.max()]
        for op in ops[:setting["@kernels"]]:
            op(x)
        torch.cuda.synchronize()
    t2 = time.monotonic()
    os.write(out_w, f"{t1 - t0:.6f} {t2 - t1:.6f} {int(y)}\n".encode())
    os._exit(0)


def busy_gpu(ready_w):
    """Keeps the GPU busy with ~0.5 ms kernels, each synchronized, until killed."""
    os.environ["CUDA_MODULE_LOADING"] = "LAZY"
    torch.cuda.init()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    os.write(ready_w, b"r")
    while True:
        torch.cuda._sleep(800_000)  # GPU cycles: about 0.5 ms at the H100's and H200's clocks
        torch.cuda.synchronize()


def live_context(ready_w, queues):
    """Holds a context (and 32 MiB of device memory) idle until killed."""
    os.environ["CUDA_MODULE_LOADING"] = "LAZY"
    if queues:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = str(queues)
    torch.cuda.init()
    keep = torch.ones(8 << 20, device="cuda")
    torch.cuda.synchronize()
    os.write(ready_w, b"r")
    while True:
        time.sleep(3600)


def kill_all(pids):
    """Kills the helper processes and reaps them."""
    for pid in pids:
        os.kill(pid, 9)
    for pid in pids:
        os.waitpid(pid, 0)


def run(n, setting):
    holders = []
    if "@live" in setting:
        count, queues = setting["@live"]
        ready_r, ready_w = os.pipe()
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                live_context(ready_w, queues)
                os._exit(0)
            holders.append(pid)
        for _ in range(count):
            os.read(ready_r, 1)
        os.close(ready_r)
        os.close(ready_w)
    try:
        return run_beside_busy(n, setting)
    finally:
        kill_all(holders)


def spin_cpu():
    """Keeps one CPU busy until killed (no CUDA)."""
    while True:
        pass


def run_beside_busy(n, setting):
    spinners = []
    for _ in range(setting.get("@cpu_busy", 0)):
        pid = os.fork()
        if pid == 0:
            spin_cpu()
        spinners.append(pid)
    try:
        return run_beside_busy_gpu(n, setting)
    finally:
        kill_all(spinners)


def run_beside_busy_gpu(n, setting):
    busy = None
    if setting.get("@busy"):
        ready_r, ready_w = os.pipe()
        busy = os.fork()
        if busy == 0:
            busy_gpu(ready_w)
            os._exit(0)
        os.read(ready_r, 1)
        os.close(ready_r)
        os.close(ready_w)
    try:
        return run_children(n, setting)
    finally:
        kill_all([busy] if busy else [])


def run_children(n, setting):
    go_r, go_w = os.pipe()
    out_r, out_w = os.pipe()
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            child(go_r, out_w, setting)
        kids.append(pid)
    time.sleep(0.3)  # every child forked and waiting
    t0 = time.monotonic()
    os.write(go_w, b"g" * n)
    failed = 0
    for pid in kids:
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    wall = time.monotonic() - t0
    os.close(out_w)
    data = b""
    while True:
        chunk = os.read(out_r, 65536)
        if not chunk:
            break
        data += chunk
    for fd in (go_r, go_w, out_r):
        os.close(fd)
    rows = [list(map(float, line.split()[:2])) for line in data.decode().splitlines()
            if line.strip() and not line.startswith("unshare failed")]
    init = statistics.median(r[0] for r in rows) if rows else 0.0
    first = statistics.median(r[1] for r in rows) if rows else 0.0
    return wall, init, first, failed


QUEUES_NAME = re.compile(r"LAZY \+ (\d+) hardware queues?")


def setting_named(name):
    """SETTINGS[name], or for "LAZY + N hardware queues" with any N, that many queues."""
    if name in SETTINGS:
        return SETTINGS[name]
    m = QUEUES_NAME.fullmatch(name)
    if m:
        return {"CUDA_MODULE_LOADING": "LAZY", "CUDA_DEVICE_MAX_CONNECTIONS": m.group(1)}
    sys.exit(f"ctx_settings_bench.py: unknown setting '{name}' (known: {', '.join(SETTINGS)}, or 'LAZY + N hardware queues')")


def fastest_rounds(rounds):
    """Per setting, from a list of rounds (each {name: (alone, wall, init, first, failed)}): the
    round with the least wall of N at once, and every round's wall, in order."""
    best, walls = {}, {}
    for measured in rounds:
        for name, row in measured.items():
            walls.setdefault(name, []).append(row[1])
            if name not in best or row[1] < best[name][1]:
                best[name] = row
    return best, walls


def self_test():
    """The fastest round is picked per setting, whatever round it came in; the walls stay in order."""
    rounds = [{"a": (0.5, 4.2, 0.3, 2.7, 0), "b": (0.4, 1.7, 0.3, 0.9, 0)},
              {"a": (0.5, 3.4, 0.3, 2.1, 0), "b": (0.4, 1.9, 0.3, 0.9, 1)}]
    best, walls = fastest_rounds(rounds)
    bad = []
    if best["a"][1] != 3.4 or best["b"][1] != 1.7 or best["b"][4] != 0:
        bad.append(f"fastest rounds: {best}")
    if walls != {"a": [4.2, 3.4], "b": [1.7, 1.9]}:
        bad.append(f"walls in order: {walls}")
    print("\n".join(bad) or "ctx_settings_bench self-test: ok")
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    if torch is None:
        sys.exit("ctx_settings_bench.py: needs torch (python3 -c 'import torch' failed)")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    names = sys.argv[2:] or list(SETTINGS)
    rounds = max(1, int(os.environ.get("CTX_ROUNDS", "1")))
    measured_rounds = []
    for _ in range(rounds):  # round by round, so a drift of the machine reaches every setting alike
        measured = {}
        for name in names:
            setting = setting_named(name)
            alone = run(1, setting)[0]
            measured[name] = (alone, *run(n, setting))
        measured_rounds.append(measured)
    best, walls = fastest_rounds(measured_rounds)
    print(f"| setting | 1 alone: wall s | {n} at once: wall s | serial s per context ({n} at once / {n}) "
          f"| init median s | first kernel median s | failed | each round's serial s |")
    print("|---|---|---|---|---|---|---|---|")
    serial = {}
    for name in names:
        alone, wall, init, first, failed = best[name]
        serial[name] = wall / n
        each = ", ".join(f"{w / n:.3f}" for w in walls[name])
        print(f"| {name} | {alone:.3f} | {wall:.3f} | {wall / n:.3f} | {init:.3f} | {first:.3f} | {failed} | {each} |")
    if rounds > 1:
        print(f"each setting measured in {rounds} rounds and priced at its fastest")
    if "gauntlet (LAZY)" in serial:
        print(f"serial_seconds_per_context={serial['gauntlet (LAZY)']:.4f}")
    if "LAZY + 1 hardware queue" in serial:
        print(f"serial_seconds_per_context_one_queue={serial['LAZY + 1 hardware queue']:.4f}")
    # Every other queue count measured (GAUNTLET_CONCURRENT_GATE_QUEUES=N gives the determinism and
    # timing children N queues): the throughput ceiling prices such contexts at their own cost.
    for name, seconds in serial.items():
        m = QUEUES_NAME.fullmatch(name)
        if m and int(m.group(1)) != 1:
            print(f"serial_seconds_per_context_queues_{int(m.group(1))}={seconds:.4f}")


if __name__ == "__main__":
    sys.exit(main())
