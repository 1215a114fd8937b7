#!/usr/bin/env bash
# hosts.sh: N "hosts" on one machine for the shaped-link bench (bench/shaped_links.sh).
# Each host is a network namespace lsh<i> whose eth0 (10.77.0.<i+1>/24) is one end of a
# veth pair; the other ends hang on bridge lsbr0 (10.77.0.254, in the root namespace,
# where mpirun runs): a switch with one port per host. RATE shapes both directions of
# every port with tbf (egress of eth0 inside the host: its uploads; egress of the bridge
# port: its downloads), so each host has a full-duplex link of RATE, like a NIC on a
# non-blocking switch. Latency is what veth + bridge measure (netem is not in this kernel).
#   bash hosts.sh up N RATE     (RATE as tc writes it: 100mbit, 1gbit, 10gbit; "none": unshaped)
#   bash hosts.sh shape N RATE  (re-shape the existing hosts)
#   bash hosts.sh down          (removes every lsh* namespace, its veths, and the bridge)
# Needs root, iproute2 and the tbf qdisc.
set -euo pipefail
cmd=${1:?usage: hosts.sh up|shape|down [N RATE]}

shape_dev() {  # NS("" = root) DEV RATE
  local ns=$1 dev=$2 rate=$3 run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  "${run[@]}" tc qdisc del dev "$dev" root 2>/dev/null || true
  [ "$rate" = none ] && return 0
  # burst: at least one 64 KiB TSO/GRO super-packet and 1 ms of the rate, so tbf can
  # reach its rate at high speeds; limit: ~20 ms of queue.
  local bps
  bps=$(python3 -c "import re,sys; m=re.fullmatch(r'(\d+(?:\.\d+)?)([kmg]?)bit','$rate'); \
sys.exit('hosts.sh: RATE must look like 100mbit, 1gbit or none, not $rate') if not m else \
print(int(float(m[1])*{'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]]))")
  local burst=$(( bps / 8 / 1000 > 131072 ? bps / 8 / 1000 : 131072 ))
  local limit=$(( bps / 8 / 50 > 2 * burst ? bps / 8 / 50 : 2 * burst ))
  "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" limit "$limit"
}

case $cmd in
  up)
    n=${2:?N}; rate=${3:?RATE}
    bash "$0" down
    ip link add lsbr0 type bridge
    ip addr add 10.77.0.254/24 dev lsbr0
    ip link set lsbr0 up
    for ((i = 0; i < n; i++)); do
      ip netns add "lsh$i"
      ip link add "lsv$i" type veth peer name "lsp$i"
      ip link set "lsp$i" netns "lsh$i"
      ip netns exec "lsh$i" ip link set "lsp$i" name eth0
      ip netns exec "lsh$i" ip addr add "10.77.0.$((i + 1))/24" dev eth0
      ip netns exec "lsh$i" ip link set eth0 up
      ip netns exec "lsh$i" ip link set lo up
      ip link set "lsv$i" master lsbr0
      ip link set "lsv$i" up
    done
    bash "$0" shape "$n" "$rate"
    ;;
  shape)
    n=${2:?N}; rate=${3:?RATE}
    for ((i = 0; i < n; i++)); do
      shape_dev "lsh$i" eth0 "$rate"
      shape_dev "" "lsv$i" "$rate"
    done
    ;;
  down)
    for ns in $(ip netns list | awk '/^lsh[0-9]+/ {print $1}'); do ip netns del "$ns"; done
    for dev in $(ip -o link show | awk -F': ' '$2 ~ /^lsv[0-9]+@/ {split($2, a, "@"); print a[1]}'); do
      ip link del "$dev" 2>/dev/null || true
    done
    ip link del lsbr0 2>/dev/null || true
    ;;
  *) echo "hosts.sh: unknown command '$cmd' (up, shape, down)" >&2; exit 2 ;;
esac
