#!/bin/sh
# The kernel's own interface takes the whole policy, one rule per line, once.
# CRITICAL_DATA rules exist from 5.12 on: older kernels refuse the policy.
set -e
release=$(uname -r)
major=${release%%[!0-9]*}
minor=${release#*.}
minor=${minor%%[!0-9]*}
if [ "$major" -lt 5 ] || { [ "$major" -eq 5 ] && [ "$minor" -lt 12 ]; }; then
  grep -v 'func=CRITICAL_DATA' ima-policy > /sys/kernel/security/ima/policy
else
  cat ima-policy > /sys/kernel/security/ima/policy
fi
