#!/bin/sh
# Checks the service files in this folder: the systemd unit with
# `systemd-analyze verify` and its sandbox exposure (`systemd-analyze security
# --offline`, at most 2.0 of 10), the procd script's shell syntax.
#
#   edge/deploy/verify.sh
#
# Needs systemd-analyze (Debian package `systemd`). The unit's ExecStart names
# the installed binary; verify checks that it exists, so a copy of the unit
# pointing at /bin/true is what gets verified.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v systemd-analyze >/dev/null || { echo "verify.sh: systemd-analyze is missing (apt-get install systemd)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's|^ExecStart=/usr/local/bin/mcpx-edge |ExecStart=/bin/true |' "$here/mcpx.service" >"$tmp/mcpx.service"
grep -q '^ExecStart=/bin/true ' "$tmp/mcpx.service" || { echo "verify.sh: ExecStart no longer starts /usr/local/bin/mcpx-edge" >&2; exit 1; }
systemd-analyze verify "$tmp/mcpx.service"
if ! score=$(systemd-analyze security --offline=yes --threshold=20 "$tmp/mcpx.service"); then
    echo "$score"
    echo "verify.sh: the unit's sandbox exposure is over 2.0" >&2
    exit 1
fi
echo "$score" | tail -n 1
sh -n "$here/mcpx.init"
echo "verify.sh: mcpx.service and mcpx.init OK"
