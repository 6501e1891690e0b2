#!/usr/bin/env bash
# `just install` / `just uninstall`: the release binary, its shell completions (bash, zsh, fish)
# and man pages under PREFIX (default /usr/local as root, ~/.local otherwise), and the capture
# permission (setcap cap_net_raw,cap_net_admin=eip) so that sniff runs without root.
# KEYS_FROM=1 also grants what `--keys-from PID` needs without root: cap_sys_admin (uprobes)
# and cap_sys_ptrace (another user's process). Not by default: CAP_SYS_ADMIN is a broad grant
# (docs/decisions.md #150); h2ledger gives every capability up once the capture and the probes
# are open.
# The systemd unit (dist/systemd/h2ledger.service, ExecStart pointing at PREFIX/bin/h2ledger)
# goes to PREFIX/lib/systemd/system, enabled by no one; its environment file to
# PREFIX/share/h2ledger/h2ledger.env and, as root, to /etc/default/h2ledger when there is none.
# Not root: everything that needs root is done by one sudo command (one password prompt).
#
# usage: scripts/install.sh install|uninstall   (PREFIX=DIR, KEYS_FROM=1 in the environment)
set -euo pipefail

action=${1:?install or uninstall}
say() { echo "just $action: $*" >&2; }

if [ "$(id -u)" -eq 0 ]; then root=1; else root=0; fi
if [ -n "${PREFIX:-}" ]; then
    prefix=$PREFIX
elif [ "$root" -eq 1 ]; then
    prefix=/usr/local
else
    prefix=$HOME/.local
fi
case $prefix in /*) ;; *) prefix=$PWD/$prefix ;; esac

bin=$prefix/bin/h2ledger
bash_c=$prefix/share/bash-completion/completions/h2ledger
zsh_c=$prefix/share/zsh/site-functions/_h2ledger
fish_c=$prefix/share/fish/vendor_completions.d/h2ledger.fish
man1=$prefix/share/man/man1
unit=$prefix/lib/systemd/system/h2ledger.service
env_example=$prefix/share/h2ledger/h2ledger.env
env_file=/etc/default/h2ledger

# Whether this user can write under PREFIX (the first existing directory up the path).
writable() {
    local d=$prefix
    while [ ! -e "$d" ]; do d=$(dirname "$d"); done
    [ -w "$d" ] && { [ ! -e "$prefix" ] || [ -w "$prefix" ]; }
}

# Runs the commands in the script file $1 as root: directly, or through one sudo.
as_root() {
    if [ "$root" -eq 1 ]; then
        bash "$1"
    else
        say "sudo is asked once, for: $2"
        sudo bash "$1"
    fi
}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
files=$stage/files.sh   # puts (or removes) the files
caps=$stage/caps.sh     # the capture permission
: >"$files"
: >"$caps"

caps_wanted=cap_net_raw,cap_net_admin
if [ "${KEYS_FROM:-0}" = 1 ]; then
    caps_wanted=$caps_wanted,cap_sys_admin,cap_sys_ptrace
fi

if [ "$action" = install ]; then
    out=${CARGO_TARGET_DIR:-target}/release
    say "building the release binary (cargo build --release: 2 to 6 minutes from scratch on 2 cores)"
    cargo build --release --bin h2ledger
    "$out/h2ledger" completions bash >"$stage/h2ledger.bash"
    "$out/h2ledger" completions zsh >"$stage/_h2ledger"
    "$out/h2ledger" completions fish >"$stage/h2ledger.fish"
    "$out/h2ledger" man --dir "$stage/man1" 2>/dev/null
    sed "s|/usr/local/bin/h2ledger|$bin|" dist/systemd/h2ledger.service >"$stage/h2ledger.service"
    q() { printf '%q' "$1"; }
    {
        echo "set -euo pipefail"
        echo "install -D -m 755 $(q "$out/h2ledger") $(q "$bin")"
        echo "install -D -m 644 $(q "$stage/h2ledger.bash") $(q "$bash_c")"
        echo "install -D -m 644 $(q "$stage/_h2ledger") $(q "$zsh_c")"
        echo "install -D -m 644 $(q "$stage/h2ledger.fish") $(q "$fish_c")"
        echo "install -d -m 755 $(q "$man1")"
        echo "install -m 644 $(q "$stage/man1")/*.1 $(q "$man1")/"
        echo "install -D -m 644 $(q "$stage/h2ledger.service") $(q "$unit")"
        echo "install -D -m 644 dist/systemd/h2ledger.env $(q "$env_example")"
        if [ "$root" -eq 1 ]; then
            echo "[ -e $env_file ] || install -D -m 644 dist/systemd/h2ledger.env $env_file"
        fi
    } >"$files"
    if command -v setcap >/dev/null 2>&1 || [ -x /usr/sbin/setcap ] || [ -x /sbin/setcap ]; then
        {
            echo "set -euo pipefail"
            # setcap lives in /sbin, outside a user's PATH.
            echo 'PATH=$PATH:/usr/sbin:/sbin'
            echo "setcap $caps_wanted=eip $(q "$bin")"
        } >"$caps"
    else
        say "setcap is missing (apt-get install libcap2-bin): capture will need root"
    fi
    if writable; then
        bash "$files"
        if [ -s "$caps" ]; then
            as_root "$caps" "setcap $caps_wanted=eip $bin" || say "setcap failed: capture will need root (a file system without extended attributes, or mounted nosuid?)"
        fi
    else
        cat "$caps" >>"$files"
        as_root "$files" "installing under $prefix and setcap on $bin"
    fi
    say "installed:"
    echo "  binary           $bin" >&2
    getcap "$bin" 2>/dev/null | sed 's/^/  capture rights   /' >&2 || true
    echo "  bash completion  $bash_c" >&2
    echo "  zsh completion   $zsh_c" >&2
    echo "  fish completion  $fish_c" >&2
    for m in "$stage"/man1/*.1; do
        echo "  man page         $man1/$(basename "$m")" >&2
    done
    echo "  systemd unit     $unit (not enabled)" >&2
    echo "  its settings     $env_example" >&2
    if [ "$root" -eq 1 ]; then
        echo "                   $env_file (kept if it was there)" >&2
        say "to run it: edit $env_file, then systemctl daemon-reload && systemctl enable --now h2ledger"
    else
        say "the unit is a system unit: as root, copy it to /etc/systemd/system and $env_example to $env_file"
    fi
    case ":$PATH:" in *":$prefix/bin:"*) ;; *) say "note: $prefix/bin is not in PATH" ;; esac
    if [ "$prefix" = "$HOME/.local" ]; then
        say "note: zsh looks in $prefix/share/zsh/site-functions only with fpath+=($prefix/share/zsh/site-functions) before compinit in ~/.zshrc"
    fi
    if [ "${KEYS_FROM:-0}" != 1 ]; then
        say "note: sniff --keys-from PID (TLS secrets from a Go program) needs root; KEYS_FROM=1 just install grants it cap_sys_admin,cap_sys_ptrace instead"
    fi
    say "try: h2ledger -D; man h2ledger; h2ledger sniff -i lo --duration 5s"
elif [ "$action" = uninstall ]; then
    q() { printf '%q' "$1"; }
    gone=()
    for f in "$bin" "$bash_c" "$zsh_c" "$fish_c" "$man1"/h2ledger.1 "$man1"/h2ledger-*.1 "$unit" "$env_example"; do
        if [ -e "$f" ]; then
            gone+=("$f")
            echo "rm -f $(q "$f")" >>"$files"
        fi
    done
    if [ ${#gone[@]} -eq 0 ]; then
        say "nothing of h2ledger under $prefix"
        exit 0
    fi
    if writable; then bash "$files"; else as_root "$files" "removing h2ledger from $prefix"; fi
    say "removed:"
    printf '  %s\n' "${gone[@]}" >&2
    if [ -e "$env_file" ]; then
        say "kept $env_file (your settings of the service)"
    fi
else
    echo "usage: $0 install|uninstall" >&2
    exit 2
fi
