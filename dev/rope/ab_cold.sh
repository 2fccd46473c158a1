#!/bin/sh
# dev/rope/ab_cold.sh — throwaway: two txops binaries (BASE, default /tmp/txops_base, and build/txops) alternating on
# one suite from DRAM (--cold, the B=1,S=8192 shapes, 1 thread), ROUNDS rounds; prints the min per case of each.
# Usage: dev/rope/ab_cold.sh ISA SUITE ROUNDS   (ISA: avx2, or "" for the best)
ISA=$1; SUITE=$2; R=$3; BASE=${BASE:-/tmp/txops_base}
rm -f /tmp/ab_cold_*.txt
for i in $(seq $R); do
  for b in base new; do
    bin=$BASE; [ $b = new ] && bin=build/txops
    TXOPS_MAX_ISA=$ISA $bin bench --cold --suite $SUITE --shape B=1,S=8192 --threads 1 2>/dev/null | grep "^$SUITE" | awk '{print $2"/"$3"/"$5, $6}' >> /tmp/ab_cold_$b.txt
  done
done
for b in base new; do sort -k1,1 -k2,2n /tmp/ab_cold_$b.txt | awk '!seen[$1]++ {print $1, $2}' > /tmp/ab_cold_${b}_min.txt; done
join /tmp/ab_cold_base_min.txt /tmp/ab_cold_new_min.txt | awk '{printf "%-80s base %8.3f new %8.3f  %+.1f%%\n", $1, $2, $3, 100*($2/$3-1)}'
