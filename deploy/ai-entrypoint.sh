#!/bin/sh
# Entrypoint of the wizard_ai image: when AI_WORKERS is empty, size it from the CPU cap
# of the container (compose.yaml: AI_CPUS, read back from the cgroup): one worker per
# CPU, rounded to the nearest whole number, at least 1; without a cap, one per CPU the
# process may run on. A value in AI_WORKERS is kept as it is. Then runs the command.
#
# WIZARD_CGROUP_ROOT (default /sys/fs/cgroup) exists for deploy/validate.sh's tests.
set -eu

root="${WIZARD_CGROUP_ROOT:-/sys/fs/cgroup}"

workers_from_cap() {
	quota=""
	period=""
	if [ -r "$root/cpu.max" ]; then
		# cgroup v2: "<quota> <period>" or "max <period>"
		read -r quota period <"$root/cpu.max"
	else
		for dir in "$root/cpu" "$root/cpu,cpuacct"; do
			if [ -r "$dir/cpu.cfs_quota_us" ] && [ -r "$dir/cpu.cfs_period_us" ]; then
				quota=$(cat "$dir/cpu.cfs_quota_us")
				period=$(cat "$dir/cpu.cfs_period_us")
				[ "$quota" = "-1" ] && quota=max
				break
			fi
		done
	fi
	case "$quota:$period" in
	max:* | :* | *:) nproc ;;
	*)
		n=$(((quota + period / 2) / period))
		[ "$n" -ge 1 ] || n=1
		echo "$n"
		;;
	esac
}

if [ -z "${AI_WORKERS:-}" ]; then
	AI_WORKERS=$(workers_from_cap)
	export AI_WORKERS
	echo "wizard-ai-entrypoint: AI_WORKERS=$AI_WORKERS (from the CPU cap)" >&2
fi
exec "$@"
