#!/usr/bin/env bash
# Audits a corpus on Slurm: a job array of `gauntlet audit` shards, then one job that merges them.
#
#   tools/slurm/audit-array.sh [options] CORPUS OUTDIR [-- AUDIT_FLAGS...]
#
#   -n, --shards N        array tasks, one shard each (default 4)
#   --gauntlet PATH       the gauntlet binary (default $GAUNTLET_BIN, else build/gauntlet of this checkout)
#   --sbatch "ARGS"       extra sbatch arguments for every job (partition, account, time, --cpus-per-task)
#   --wait                wait for the merge job; exit 0 when it succeeded, else 1 (CI)
#
# OUTDIR (on a file system every node sees) receives shard-I.db per task, all.db (the merge),
# report.html and junit.xml (gauntlet report of all.db), replays/ and logs/. AUDIT_FLAGS go to every
# `gauntlet audit` (e.g. --gates contract,accuracy --budget 2); each task's shard comes from
# SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT, which gauntlet audit reads itself (docs/slurm.md).
# Run again with the same OUTDIR to resume: each shard continues its database.
set -euo pipefail

die() { echo "audit-array.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

# --- inside a job: the script submits itself with --role shard|merge --------------------------------
if [ "${1:-}" = "--role" ]; then
  role=$2 gauntlet=$3 corpus=$4 outdir=$5
  shift 5
  [ "${1:-}" = "--" ] && shift
  case "$role" in
    shard)
      id=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}
      flags=("$@")
      # One gate process per CPU Slurm gave the task, unless the flags say otherwise.
      have_jobs=0
      for f in "${flags[@]}"; do case "$f" in --jobs|--jobs=*|-j|-j*) have_jobs=1 ;; esac; done
      [ "$have_jobs" = 1 ] || flags+=(--jobs "${SLURM_CPUS_PER_TASK:-1}")
      echo "gauntlet audit shard $((id - ${SLURM_ARRAY_TASK_MIN:-0}))/${SLURM_ARRAY_TASK_COUNT:-?} on $(hostname)"
      rc=0
      "$gauntlet" audit "$corpus" --db "$outdir/shard-$id.db" --replay-dir "$outdir/replays" \
        --work-dir "$outdir/work-$id" "${flags[@]}" || rc=$?
      # 1 means some kernel did not pass: a result, stored in the database, not a failed task.
      # 2 (bad usage, unusable corpus or database) fails the task, and with it the merge.
      [ "$rc" -le 1 ] && exit 0
      exit "$rc"
      ;;
    merge)
      shopt -s nullglob
      dbs=("$outdir"/shard-*.db)
      [ "${#dbs[@]}" -gt 0 ] || die "no shard databases in $outdir"
      "$gauntlet" merge "${dbs[@]}" -o "$outdir/all.db"
      "$gauntlet" report "$outdir/all.db" -o "$outdir/report.html" --junit "$outdir/junit.xml"
      exit 0
      ;;
    *) die "unknown role '$role'" ;;
  esac
fi

# --- on the submitting host ---------------------------------------------------------------------------
shards=4 wait=0 sbatch_args="" gauntlet=${GAUNTLET_BIN:-}
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--shards) [ $# -ge 2 ] || die "$1 needs a number"; shards=$2; shift 2 ;;
    --gauntlet) [ $# -ge 2 ] || die "$1 needs a path"; gauntlet=$2; shift 2 ;;
    --sbatch) [ $# -ge 2 ] || die "$1 needs arguments"; sbatch_args=$2; shift 2 ;;
    --wait) wait=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (audit flags go after --)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ "${#positional[@]}" -eq 2 ] || usage
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive number, not '$shards'"
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm submit host"
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$gauntlet" ] || gauntlet="$here/../../build/gauntlet"
[ -x "$gauntlet" ] || die "no gauntlet binary at $gauntlet (build it, or give --gauntlet PATH)"
[ -e "${positional[0]}" ] || die "corpus ${positional[0]} does not exist"
# Jobs may start in another directory: every path absolute.
gauntlet=$(cd "$(dirname "$gauntlet")" && pwd)/$(basename "$gauntlet")
corpus=$(cd "$(dirname "${positional[0]}")" && pwd)/$(basename "${positional[0]}")
mkdir -p "${positional[1]}/logs" || die "cannot create ${positional[1]}"
outdir=$(cd "${positional[1]}" && pwd)
script="$here/$(basename "$0")"

# shellcheck disable=SC2086  # --sbatch's words are meant to split
array=$(sbatch --parsable --array="0-$((shards - 1))" --job-name=gauntlet-audit \
  --output="$outdir/logs/shard-%a.out" $sbatch_args \
  "$script" --role shard "$gauntlet" "$corpus" "$outdir" -- "$@")
array=${array%%;*}
echo "submitted audit array $array: $shards shards of $corpus"
# afterok: the merge runs once every shard succeeded; a failed shard cancels it (kill-on-invalid-dep).
merge_flags=(--parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --job-name=gauntlet-merge
             --output="$outdir/logs/merge.out")
if [ "$wait" = 1 ]; then
  rc=0
  # shellcheck disable=SC2086
  merge=$(sbatch "${merge_flags[@]}" --wait $sbatch_args "$script" --role merge "$gauntlet" "$corpus" "$outdir") || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "audit-array.sh: the merge job ${merge%%;*} did not succeed (exit $rc); logs in $outdir/logs" >&2
    exit 1
  fi
  echo "merge job ${merge%%;*} done: $outdir/all.db, $outdir/report.html, $outdir/junit.xml"
else
  # shellcheck disable=SC2086
  merge=$(sbatch "${merge_flags[@]}" $sbatch_args "$script" --role merge "$gauntlet" "$corpus" "$outdir")
  echo "submitted merge job ${merge%%;*} (after the array): $outdir/all.db, $outdir/report.html"
fi
