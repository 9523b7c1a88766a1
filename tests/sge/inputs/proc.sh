#!/bin/sh
# A procedure that says how it was called: its arguments, its user, the exit status
# of the job it follows (an epilog's).
echo "PROC [$*] user=$(id -un) exit=${SGE_JOBEXIT_STAT:-none}"
echo "PROC-ERR" >&2
