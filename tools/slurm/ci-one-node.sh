#!/usr/bin/env bash
# CI check of the Slurm path: a one-node Slurm on localhost runs an array audit of a few corpus
# kernels; the merged database must hold exactly a single-process audit's results.
#
#   tools/slurm/ci-one-node.sh [--gauntlet PATH] [--keep]
#
# Needs root, Debian's slurm-wlm and munge (tools/install-deps.sh) and python3. Exits 77 (ctest's
# skip code) with the reason when they are missing, 0 when the two results agree, 1 otherwise.
# Everything (munge key and socket, slurm.conf, state, logs) lives in a fresh temporary folder;
# the daemons it starts are stopped by their pids on exit. --keep leaves the folder for a look.
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gauntlet=${GAUNTLET_BIN:-$root/build/gauntlet}
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --gauntlet) gauntlet=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--gauntlet PATH] [--keep]" >&2; exit 2 ;;
  esac
done

[ "$(id -u)" = 0 ] || skip "not root (slurmd must run as root to start jobs)"
for b in munged slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null || skip "$b not installed (apt-get install slurm-wlm munge)"
done
command -v python3 >/dev/null || skip "python3 not installed"
[ -x "$gauntlet" ] || fail "no gauntlet binary at $gauntlet"

work=$(mktemp -d /tmp/gauntlet-slurm-XXXXXX)
chmod 755 "$work"  # munge's socket folder must be reachable by every user
cleanup() {
  for f in "$work"/slurmd.pid "$work"/slurmctld.pid "$work"/munge/munged.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  if [ "$keep" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT  # through the EXIT trap: the daemons stop with the script

# --- munge: its own key and socket, so a host's munge (if any) is left alone -------------------------
mkdir -p "$work/munge" && chmod 711 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed" \
  || fail "munged did not start: $(tail -n 3 "$work/munge/munged.log" 2>/dev/null)"

# --- slurm: one node, localhost, two free ports -------------------------------------------------------
read -r ctld_port slurmd_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
cpus=$(nproc)
mkdir -p "$work/state" "$work/spool" "$work/logs"
cat > "$work/slurm.conf" <<CONF
ClusterName=gauntletci
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/logs/slurmctld.log
SlurmdLogFile=$work/logs/slurmd.log
# No cgroups in a CI container: processes tracked by their parent pids, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -n 5 "$work/logs/slurmctld.log")"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start: $(tail -n 5 "$work/logs/slurmd.log")"
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qx idle && break
  sleep 0.5
done
sinfo -h -o %T | grep -qx idle || fail "the node never became idle: $(sinfo 2>&1; tail -n 5 "$work/logs/slurmd.log")"
echo "slurm $(sinfo -V | awk '{print $2}') up: node localhost, $cpus CPUs, ports $ctld_port/$slurmd_port"

# --- the corpus: a few kernels (controls, planted bugs, a crash) and one entry that is not a kernel ---
corpus=$work/corpus
mkdir -p "$corpus"
for k in controls/relu controls/softmax bugs/accuracy/gelu_erf_saturate bugs/contract/relu_inplace \
         bugs/contract/mean_half_returns_float hostile/segfault; do
  mkdir -p "$corpus/$(dirname "$k")"
  cp "$root/corpus/$k.json" "$root/corpus/$k.cpp" "$corpus/$(dirname "$k")/"
done
printf 'torch::Tensor forward(torch::Tensor x) { return x; }\n' > "$corpus/stray.cpp"
flags=(--gates contract,accuracy --seed 7)

# --- the array audit (2 shards) and its merge, then one process over the same corpus -----------------
start=$(date +%s)
bash "$here/audit-array.sh" --shards 2 --wait --gauntlet "$gauntlet" --sbatch "--time=10" "$corpus" "$work/out" \
  -- "${flags[@]}" || { tail -n 20 "$work"/out/logs/*.out >&2 || true; fail "the array audit failed"; }
echo "array audit and merge: $(( $(date +%s) - start )) s"
rc=0
"$gauntlet" audit "$corpus" --db "$work/single.db" --replay-dir "$work/single-replays" "${flags[@]}" \
  > "$work/single.out" 2>&1 || rc=$?
[ "$rc" -le 1 ] || { cat "$work/single.out" >&2; fail "the single-process audit exited $rc"; }

# --- compare: every kernel's (entry, verdict) and every gate's (status, category, message) ------------
for db in shard-0 shard-1 all; do
  "$gauntlet" report "$work/out/$db.db" --json "$work/$db.json" > /dev/null || fail "cannot read $db.db"
done
"$gauntlet" report "$work/single.db" --json "$work/single.json" > /dev/null || fail "cannot read single.db"
python3 - "$work" <<'PY' || fail "the merged array audit differs from the single-process audit"
import json, sys
work = sys.argv[1]
def rows(name):
    out = set()
    for k in json.load(open(f"{work}/{name}.json")):
        key = (k.get("entry"), k.get("kernel_hash"))
        out.add(key + ("verdict", k.get("verdict"), k.get("entry_error")))
        for g in k.get("gates", []):
            out.add(key + (g["name"], g["status"], g["category"], g["message"]))
    return out
def entries(name):
    return {k.get("entry") for k in json.load(open(f"{work}/{name}.json"))}
merged, single = rows("all"), rows("single")
s0, s1 = entries("shard-0"), entries("shard-1")
print(f"shard 0: {len(s0)} kernels, shard 1: {len(s1)} kernels, merged: {len(entries('all'))}, single: {len(entries('single'))}")
ok = True
if not s0 or not s1:
    print("a shard is empty: the corpus was not split"); ok = False
if s0 & s1:
    print("kernels in both shards:", sorted(s0 & s1)); ok = False
if (s0 | s1) != entries("single"):
    print("the shards together do not hold the corpus"); ok = False
for r in sorted(merged - single, key=str): print("only in merged:", r); ok = False
for r in sorted(single - merged, key=str): print("only in single:", r); ok = False
if ok: print(f"{len(merged)} rows identical")
sys.exit(0 if ok else 1)
PY
[ -s "$work/out/report.html" ] && [ -s "$work/out/junit.xml" ] || fail "the merge job wrote no report.html or junit.xml"
echo "PASS: merged array audit equals the single-process audit"
