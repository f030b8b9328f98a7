# Shared by the scripts that run wizard-server under a CPU quota: create a cgroup
# limited to QUOTA_US per PERIOD_US (v1 cpu.cfs_quota_us or v2 cpu.max), start the
# server inside it, clean up. The caller sets PERIOD_US and QUOTA_US, defines skip(),
# and calls make_cgroup then `trap cleanup EXIT`.

# The cpu controller: a v1 hierarchy mounted with the `cpu` option, else cgroup v2.
cpu_v1_mount() {
    # mountinfo: ... mount-point ... - fstype source super-options
    awk '{
        for (i = 1; i <= NF; i++) if ($i == "-") break;
        if ($(i + 1) == "cgroup") {
            n = split($(i + 3), opts, ",");
            for (j = 1; j <= n; j++) if (opts[j] == "cpu") { print $5; exit }
        }
    }' /proc/self/mountinfo
}
cgroup2_mount() {
    awk '{ for (i = 1; i <= NF; i++) if ($i == "-") break; if ($(i + 1) == "cgroup2") { print $5; exit } }' /proc/self/mountinfo
}

CG=""
VERSION=""
make_cgroup() {
    local mount
    mount="$(cpu_v1_mount)"
    if [[ -n "$mount" ]]; then
        local own
        own="$(awk -F: '{ n = split($2, c, ","); for (i = 1; i <= n; i++) if (c[i] == "cpu") print $3 }' /proc/self/cgroup | head -1)"
        CG="${mount}${own%/}/wizard-test-$$"
        VERSION=v1
        mkdir "$CG" 2>/dev/null || { CG=""; skip "cannot create $CG (cgroup v1 cpu hierarchy not writable)"; }
        echo "$PERIOD_US" > "$CG/cpu.cfs_period_us" || skip "cannot write $CG/cpu.cfs_period_us"
        echo "$QUOTA_US" > "$CG/cpu.cfs_quota_us" || skip "cannot write $CG/cpu.cfs_quota_us"
        return
    fi
    mount="$(cgroup2_mount)"
    [[ -n "$mount" ]] || skip "no cgroup v1 cpu controller and no cgroup v2 mount"
    local own parent
    own="$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)"
    parent="${mount}${own%/}"
    # The child needs the cpu controller enabled in our cgroup's subtree_control; v2
    # refuses that while our own (non-root) cgroup holds processes: then we skip.
    if ! grep -qw cpu "$parent/cgroup.subtree_control" 2>/dev/null; then
        echo "+cpu" > "$parent/cgroup.subtree_control" 2>/dev/null \
            || skip "cannot enable the cpu controller in $parent/cgroup.subtree_control"
    fi
    CG="$parent/wizard-test-$$"
    VERSION=v2
    mkdir "$CG" 2>/dev/null || { CG=""; skip "cannot create $CG (cgroup v2 not writable)"; }
    echo "$QUOTA_US $PERIOD_US" > "$CG/cpu.max" || skip "cannot write $CG/cpu.max"
}

SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [[ -n "$CG" && -d "$CG" ]]; then
        rmdir "$CG" 2>/dev/null || echo "warning: could not remove $CG"
    fi
    CG=""
    SERVER_PID=""
}
# Ctrl-C or a TERM stops the script (after the clean-up, through the EXIT trap), where
# a trap that only cleaned up let it carry on with the next run.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

