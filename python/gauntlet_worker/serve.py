# A gate child's life (`--serve`): read the Load, enter the sandbox, load the module, answer its frames.
import os
import sys
import traceback

from . import state, turns
from .baselines import Baselines, compiled_baseline_unavailable
from .building import Prebuilt, Recorder, cache_env, error_lines, seed_private_caches
from .pch import offered_headers
from .cases import error_text, first_line, internal_error_reply, run_case
from .loading import (BUILD_PREFIX, REFERENCE_PREFIX, STANDARD_CHECK_PREFIX, load_module, load_source, split_entry,
                      use_flock_baton)
from .messages import (decode_case, decode_load, decode_time, encode_case_reply, encode_load_reply, encode_peaks,
                       encode_time_reply, new_time_reply, on_device)
from .poisons import poison_heap
from .cpu_devices import cpu_devices
from .reference import Reference
from .sandbox import enter_sandbox
from .standard_check import StandardCheck
from .timing import measure_peaks, run_timing
from .wire import (REPLY_FD, REQUEST_FD, T_BYE, T_CASE, T_CASE_REPLY, T_CHECK, T_CHECK_REPLY, T_LOAD, T_LOAD_REPLY,
                   T_PEAKS, T_PEAKS_REPLY, T_TIME, T_TIME_REPLY, WORKER_INTERNAL_ERROR,
                   load_fast_checksum, read_frame, write_frame)


def serve_timing(model, ftype, payload, baselines):
    """(reply type, body) for a Time or Peaks frame."""
    if ftype == T_PEAKS:
        return T_PEAKS_REPLY, encode_peaks(measure_peaks())
    try:
        req = decode_time(payload)
    except Exception as e:  # noqa: BLE001
        rep = new_time_reply(state.DEVICE == "cuda")
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "worker could not decode the timing request: %s" % e
        return T_TIME_REPLY, encode_time_reply(rep)
    if model is None:
        rep = new_time_reply(state.DEVICE == "cuda")
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "harness: the module oracle's reference child does not time"
        return T_TIME_REPLY, encode_time_reply(rep)
    # The GPU turn (TimeRequest::turn_handshake) covers the device work: the sets to the device,
    # the calls and the timed loop, the verified outputs to the host. The reply is encoded and
    # written while another child has the GPU.
    turns.pause_triton_compiles()
    turns.begin(req["turn_handshake"])  # a TurnLost ends the worker, as in a case
    try:
        req["sets"] = [on_device(s) for s in req["sets"]]
    except Exception as e:  # noqa: BLE001 - the copy to the device is the harness's, as decoding is
        turns.end()
        rep = new_time_reply(state.DEVICE == "cuda")
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "worker could not copy the timing sets to the device: %s" % error_text(e)
        return T_TIME_REPLY, encode_time_reply(rep)
    try:
        rep = run_timing(model, req, baselines)
    finally:
        req["sets"] = None
        turns.end()
    try:
        return T_TIME_REPLY, encode_time_reply(rep)
    except Exception as e:  # noqa: BLE001
        bad = new_time_reply(state.DEVICE == "cuda")
        bad["code"] = WORKER_INTERNAL_ERROR
        bad["message"] = "worker error encoding the timing reply: %s" % e
        return T_TIME_REPLY, encode_time_reply(bad)


def serve(policy):
    frame = read_frame(REQUEST_FD)
    if frame is None or frame[0] != T_LOAD:
        return 3
    try:
        load = decode_load(frame[1])
    except Exception as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "harness: %s" % e, "", ""))
        return 3
    if load["device"] not in ("cpu", "cuda"):
        write_frame(REPLY_FD, T_LOAD_REPLY,
                    encode_load_reply(False, "harness: unknown device %s" % load["device"], "", ""))
        return 3
    if load["device"] == "cuda" and load["hardware_queues"] > 0:
        # Read when the context is created, which has not happened in this child yet (docs/gpu.md).
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = str(load["hardware_queues"])
    # The modules' sources are read before /tmp is replaced and privileges are dropped.
    load["entry"], ref_path = split_entry(load["entry"])
    # "build:<entry>": this child is the module's build step (building.py), the one
    # child that may run compilers and write (into the module's build directory only).
    building = load["entry"].startswith(BUILD_PREFIX)
    if building:
        load["entry"] = load["entry"][len(BUILD_PREFIX):]
    # "kbcheck:<entry>": a candidate's child that answers one Check frame with KernelBench's own check.
    standard = load["entry"].startswith(STANDARD_CHECK_PREFIX)
    if standard:
        load["entry"] = load["entry"][len(STANDARD_CHECK_PREFIX):]
    build_dir = load["build_dir"]
    prebuilt = None
    ref = None
    try:
        with open(load["so_path"], "r", encoding="utf-8") as f:
            source = f.read()
        if ref_path:
            with open(ref_path, "r", encoding="utf-8") as f:
                ref = (ref_path, f.read())
    except OSError as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "cannot read the module %s: %s"
                                                              % (e.filename or load["so_path"], e), "", ""))
        return 4
    try:
        import torch as _torch
    except Exception as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
            False, "harness: the Python worker cannot import torch (%s: %s; install python3-torch or set "
            "GAUNTLET_PYTHON to an interpreter that has it)" % (type(e).__name__, first_line(e)), "", ""))
        return 3
    state.use_torch(_torch)
    fast = load_fast_checksum()
    state.torch.set_num_threads(max(1, load["threads"]))
    if load["device"] == "cuda" and not load["entry"].startswith(REFERENCE_PREFIX) and not building:
        state.DEVICE = "cuda"
        # float32 means float32 in every torch op a candidate calls: torch's default lets cuDNN run
        # float32 convolutions in TF32 (10-bit mantissa), which KernelBench level 2's conv
        # candidates inherited as errors of about 1e-3 that are no line of theirs (docs/modules.md,
        # "TF32"). cuBLAS matmuls already default to IEEE float32. A candidate that turns TF32 on
        # itself, or a Triton dot's own precision, is the kernel's choice and is judged as such.
        state.torch.backends.cudnn.allow_tf32 = False
        state.torch.backends.cuda.matmul.allow_tf32 = False
    if state.DEVICE == "cuda" or building:
        # load_inline runs ninja and nvcc, Triton ptxas: the scrubbed PATH (/usr/bin:/bin) must
        # also reach this interpreter's scripts (pip's ninja), /usr/local and the CUDA toolkit.
        extra = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/local/cuda/bin"]
        try:
            import ninja  # the pip package keeps its binary beside itself
            extra.insert(0, ninja.BIN_DIR)
        except Exception:  # noqa: BLE001
            pass
        path = os.environ.get("PATH", "/usr/bin:/bin").split(":")
        os.environ["PATH"] = ":".join([d for d in extra if d not in path] + path)
    # Compiler caches: the module's own build directory while building, else this child's private
    # /tmp; never a directory shared between modules (an extension's name is no key: dozens of
    # KernelBench solutions call theirs "matmul_cuda").
    os.environ.update(cache_env(build_dir, building))
    if build_dir and not building:
        try:
            prebuilt = Prebuilt(build_dir, may_compile=state.DEVICE == "cuda")
        except (OSError, ValueError) as e:
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
                False, "harness: the module's build record is unreadable (%s)" % e, "", ""))
            return 3
    pch_headers = offered_headers(build_dir) if building and build_dir else {}
    recorder = Recorder(build_dir, pch_headers) if building else None
    # Importing torch.utils.cpp_extension (which the hooks do) runs `which` for its CUDA and ROCm
    # homes: an exec a CPU child's filter kills, so a CPU child imports it before its sandbox. A
    # toolchain child (CUDA, or building) imports it after: on torch 2.11 the import asks CUDA for
    # its devices, and a CUDA start before /proc is remounted fails for good (error 304, seen on
    # the H200 in every CUDA child).
    toolchain = building or state.DEVICE != "cpu"
    hooks = recorder or prebuilt
    if hooks is not None and not toolchain:
        hooks.install()
    use_flock_baton()
    # A CUDA module's build child gets the CUDA child's sandbox: torch's load_inline asks the GPU
    # for its compute capability (the -gencode flags) unless TORCH_CUDA_ARCH_LIST says it.
    # The filesystem read-only but the private /tmp, the module's build directory bound back:
    # writable for its build child only.
    notes, error = enter_sandbox(policy, load["device"] if building else state.DEVICE, toolchain=toolchain,
                                 build_dirs=[build_dir] if build_dir else [], build_writable=building,
                                 readonly_dirs=sorted({os.path.dirname(h) for h in pch_headers.values()}))
    if error:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "harness: sandbox setup failed: " + error, "", ""))
        return 3
    if hooks is not None and toolchain:
        hooks.install()
    if building:
        notes += " module-build(%s)" % build_dir
    elif prebuilt is not None:
        seed_private_caches(build_dir)
        notes += " prebuilt-extensions(%d)" % len(prebuilt.record.get("extensions", []))
    poisoned = ""
    if load["poison_byte"] and not load["entry"].startswith(REFERENCE_PREFIX):
        state.POISON["byte"] = load["poison_byte"]
        poisoned = poison_heap(state.POISON["byte"]) if state.DEVICE == "cpu" else \
            " cuda-cache-poison(0x%02x, before each call)" % state.POISON["byte"]
    notes += " python-worker(%s%s)%s" % ("no canaries" if poisoned else "no poison allocator, no canaries",
                                         "" if fast else ", pure-Python checksum", poisoned)
    reference = None
    checker = None  # the standard check's child (standard_check.py)
    try:
        if load["entry"].startswith(REFERENCE_PREFIX):
            names = load["entry"][len(REFERENCE_PREFIX):].split(":")
            # A CPU child: the module's CUDA placements land on the CPU here (cpu_devices.py).
            with cpu_devices():
                refmod = load_source(ref[0], ref[1], "gauntlet_reference") if ref else None
                mod = load_source(load["so_path"], source)
                reference = Reference(mod, names[0] or "Model", names[1] if len(names) > 1 and names[1] else "ModelNew",
                                      refmod)
                model = None
                signature = reference.describe()
        elif standard:
            checker = StandardCheck(load["so_path"], source, load["entry"], ref)
            model = None
            signature = "kbcheck:%s" % (load["entry"] or "ModelNew")
        elif building:
            model = load_module(load["so_path"], source, load["entry"] or "ModelNew", ref)
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(True, "", recorder.reply(), notes))
            return 0
        else:
            model = load_module(load["so_path"], source, load["entry"] or "ModelNew", ref)
            signature = "python:%s" % (load["entry"] or "ModelNew")
            why = compiled_baseline_unavailable()
            if why:
                signature += "\nno-compiled-baseline: " + why
    except BaseException as e:  # noqa: B902
        tb = traceback.extract_tb(e.__traceback__)
        where = ""
        for fr in tb:
            if fr.filename in (load["so_path"], ref_path):
                where = " (line %d)" % fr.lineno
        if building and recorder.failed:
            # One build-error with the compiler's first lines (the parent splits them off); a
            # failure that is not the module's is the harness's ("harness:").
            head = {"compile": "build failed", "call": "build call failed"}.get(recorder.failed_kind,
                                                                              "harness: the build step failed")
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
                False, "%s%s: %s\n%s" % (head, where, first_line(recorder.failed),
                                         error_lines(recorder.failed)), "", notes))
            return 5
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
            False, "loading the Python module failed%s: %s" % (where, error_text(e)), "", notes))
        return 4
    if state.DEVICE == "cuda":
        # Torch's CUDA start and a copy each way while loading: the parent gives a child its GPU
        # turn per request (src/sandbox/file_lock.cpp), so this overlaps other children's work.
        # An unusable GPU shows in the first case, where it is categorized.
        try:
            state.torch.zeros(256, device="cuda").cpu()
            state.torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
    write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(True, "", signature, notes))

    baselines = None  # the timing baselines, built at the first Time frame
    while True:
        frame = read_frame(REQUEST_FD)
        if frame is None or frame[0] == T_BYE:
            return 0
        ftype, payload = frame
        if ftype == T_CHECK:
            verdict = checker.run() if checker else b'{"verdict": "error", "reason": "harness: not a standard-check child"}'
            write_frame(REPLY_FD, T_CHECK_REPLY, verdict)
            continue
        if ftype in (T_TIME, T_PEAKS):
            if baselines is None and model is not None:
                baselines = Baselines(model)
            try:
                rtype, body = serve_timing(model, ftype, payload, baselines)
            except turns.TurnLost:
                return 3  # out of step with the parent: nothing more can be said on this pipe
            write_frame(REPLY_FD, rtype, body)
            continue
        if ftype != T_CASE:
            return 3
        try:
            req = decode_case(payload)
        except Exception as e:
            rep = internal_error_reply(0, "worker could not decode the case: %s" % error_text(e))
        else:
            # The case's GPU turn: asked for now that the case is read, given back once the outputs
            # are on the host (the parent also ends it at the reply, whatever happens in between).
            turns.pause_triton_compiles()
            try:
                turns.begin(req["turn_handshake"])
            except turns.TurnLost:
                return 3
            try:
                req["args"] = on_device(req["args"])
            except Exception as e:  # noqa: BLE001 - the copy to the device is the harness's, as decoding is
                rep = internal_error_reply(0, "worker could not copy the case to the device: %s" % error_text(e))
            else:
                try:
                    rep = reference.run(req) if reference else run_case(model, req, load["record_ops"])
                except turns.TurnLost:
                    return 3  # out of step with the parent: nothing more can be said on this pipe
                except BaseException as e:  # noqa: B902
                    rep = internal_error_reply(req["case_id"], "worker error: %s" % error_text(e))
            req["args"] = None  # the device copies go before the reply is encoded
            turns.end()
        try:
            body = encode_case_reply(rep)
            write_frame(REPLY_FD, T_CASE_REPLY, body)
        except BaseException as e:  # noqa: B902 - nothing of the reply was written (write_frame checks first)
            write_frame(REPLY_FD, T_CASE_REPLY, encode_case_reply(
                internal_error_reply(rep["case_id"], "worker error encoding the reply: %s" % error_text(e))))
