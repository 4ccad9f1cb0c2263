#!/bin/sh
# Sets up the reference MAC with the label method: `lsmpmon mac setup` mounts
# bpffs and tracefs, adds the scaling runs' unmatched rules (pad_rules, see
# README), labels the policy's files (every method, so the guests stay alike),
# loads and pins the programs, and turns tracing on for the denial records.
# The three mac-* setups differ only in --method. Run by the lab as root in
# /lab/config.
set -eu
exec /bin/lsmpmon mac setup --method label --policy policy.mac --pad-rules pad_rules \
    --subject lsmpmon-workload
