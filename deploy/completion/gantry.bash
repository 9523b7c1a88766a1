# Bash completion for Gantry's q* commands (installed by deploy/install.sh into
# /etc/bash_completion.d/gantry). Options come from the command's own usage text
# (`CMD -help`), so they are always the command's; arguments from the cluster: job ids
# for the job commands, queues for -q, parallel environments for -pe, complex
# attributes for -l and -F, hosts for -h, projects for -P, users for -u.

_gantry_options() {
    # Every "-word" that starts an entry of the usage text.
    "$1" -help 2>/dev/null | grep -oE '^ *\[?-[A-Za-z_@]+' | tr -d ' [' | sort -u
}

_gantry_jobs() {
    qstat -u '*' 2>/dev/null | awk 'NR > 2 {print $1}' | sort -u
}

_gantry_complete() {
    local cmd=${COMP_WORDS[0]##*/} cur=${COMP_WORDS[COMP_CWORD]} prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    local words=""
    case "$prev" in
        -q|-masterq) words=$(qconf -sql 2>/dev/null) ;;
        -pe) words=$(qconf -spl 2>/dev/null) ;;
        -l|-F) words=$(qconf -sc 2>/dev/null | awk '!/^#/ {print $1 "="}') ;;
        -h) [ "$cmd" = qhost ] && words=$(qconf -sel 2>/dev/null) ;;
        -P) words=$(qconf -sprjl 2>/dev/null) ;;
        -u) words=$(qstat -u '*' 2>/dev/null | awk 'NR > 2 {print $4}' | sort -u) ;;
        -ckpt) words=$(qconf -sckptl 2>/dev/null) ;;
        -ar) words=$(qrstat -u '*' 2>/dev/null | awk 'NR > 2 {print $1}') ;;
    esac
    if [ -z "$words" ]; then
        case "$cur" in
            -*) words=$(_gantry_options "$cmd") ;;
            *) case "$cmd" in
                   qdel|qhold|qrls|qalter) words=$(_gantry_jobs) ;;
                   qstat) [ "$prev" = -j ] && words=$(_gantry_jobs) ;;
                   qrdel) words=$(qrstat -u '*' 2>/dev/null | awk 'NR > 2 {print $1}') ;;
               esac ;;
        esac
    fi
    if [ -n "$words" ]; then
        # shellcheck disable=SC2207
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        case "${COMPREPLY[0]:-}" in *=) compopt -o nospace 2>/dev/null ;; esac
    else
        # shellcheck disable=SC2207
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

complete -F _gantry_complete qsub qstat qdel qalter qhold qrls qacct qhost qmod \
    qquota qrsub qrstat qrdel qrsh qlogin qselect qconf
