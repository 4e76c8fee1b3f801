#!/usr/bin/env bash
# Copies this machine's ip (iproute2) and the libraries it needs into .device-debs/iproute, which
# the device tool carries to the GPU machine: that machine has no iproute2, and the netns tests
# (two hosts made of network namespaces joined by a veth) need it. scripts/gpu-check.sh puts it on
# PATH there. Run on the development machine (Debian 12).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.device-debs/iproute
mkdir -p "$dir/lib"
grep -qx "/.device-debs/" .git/info/exclude 2>/dev/null || echo "/.device-debs/" >> .git/info/exclude
ip=$(command -v ip)
cp "$ip" "$dir/ip.bin"
# Every library ip links beyond the C library and zlib, which the GPU machine has.
ldd "$ip" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libz)\.so' | xargs -I{} cp -L {} "$dir/lib/"
cat >"$dir/ip" <<'WRAP'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/ip.bin" "$@"
WRAP
chmod +x "$dir/ip"
ls -1 "$dir" "$dir/lib"
