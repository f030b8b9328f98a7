#!/bin/sh
# wizard_haproxy's health check (compose.shards.yaml): healthy when HAProxy's runtime API
# answers `show info` (the process runs and has read its configuration). A shard that is
# down is not HAProxy's ill health: `shards.sh show` tells that.
set -eu
printf 'show info\n' | socat -t 2 - "UNIX-CONNECT:${HAPROXY_SOCKET:-/run/haproxy/admin.sock}" 2>/dev/null | grep -q '^Pid: '
