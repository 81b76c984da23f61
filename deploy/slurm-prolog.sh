#!/bin/bash
# hwcheck as a Slurm Prolog: doctor checks each node before a job starts on it.
#
# slurm.conf:
#   Prolog=/etc/slurm/hwcheck-prolog.sh   # this file, executable, owned by root
#   PrologFlags=Alloc                     # run it when the job is allocated
#
# Slurm sets a node whose Prolog exits non-zero to DRAIN and requeues the job (Slurm's
# "Prolog and Epilog Guide", Failure Handling: https://slurm.schedmd.com/prolog_epilog.html).
# So this script exits 1 only when doctor failed the node: an error-level problem (doctor's
# exit status 1: training would fail or leave the GPU), or the gate of `doctor --strict`
# (exit status 3: a node check that warns, such as GPUs NCCL hangs on without disabling
# peer-to-peer, the framework named with --framework not installed, or a finding named with
# --fail-on); `scontrol show node` then shows the reason it gives. When hwcheck itself cannot
# run (not installed: 127; refused its arguments: 2), it says so on standard error and lets
# the job start: a broken installation must not drain the whole cluster.
#
# Settings, from the environment slurmd passes to its Prolog:
#   HWCHECK             the hwcheck to run (a Prolog has no search path: a full path);
#                       default /usr/local/bin/hwcheck
#   HWCHECK_ARGS        more doctor options, split on blanks and never evaluated,
#                       e.g. "--framework torch --fail-on node-acs-redirect"
#   HWCHECK_STRICT      0: drain on errors alone (doctor without --strict); default 1
#   HWCHECK_REPORT_DIR  where each job's doctor report (JSON) is kept; default
#                       /var/log/hwcheck (no report is kept where it cannot be written)
set -u

hwcheck=${HWCHECK:-/usr/local/bin/hwcheck}
report_dir=${HWCHECK_REPORT_DIR:-/var/log/hwcheck}
read -r -a extra <<< "${HWCHECK_ARGS:-}"
gate=(--strict)
[[ ${HWCHECK_STRICT:-1} == 0 ]] && gate=()
job=${SLURM_JOB_ID:-manual}
[[ $job =~ ^[0-9A-Za-z_.-]{1,64}$ ]] || job=unnamed

mkdir -p -- "$report_dir" 2>/dev/null
report="$report_dir/doctor-$job.json"
if ! { : > "$report"; } 2>/dev/null; then
    report=/dev/null
fi

"$hwcheck" doctor --json "${gate[@]}" "${extra[@]}" > "$report" 2>/dev/null
status=$?

case $status in
    0)
        exit 0
        ;;
    1)
        echo "hwcheck: training cannot start on this node (doctor found an error; report: $report)" >&2
        exit 1
        ;;
    3)
        echo "hwcheck: this node failed the gate (doctor --strict or --fail-on; report: $report)" >&2
        exit 1
        ;;
    *)
        echo "hwcheck: doctor could not check this node (exit status $status); the job starts unchecked" >&2
        exit 0
        ;;
esac
